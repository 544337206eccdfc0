//! Sessions with HTTP upstreams live in their sealed ids: replicas that share
//! a key serve one client alternately, and an upstream that forgets a session
//! makes the client start over rather than silently getting a new one.

mod identity;

use hyper::{Method, StatusCode};
use mcp_ui_model::config::Config;
use serde_json::{Value, json};
use support::clients::{parse_sse, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use tokio_util::sync::CancellationToken;

use crate::support;

const KEY: &str = "3f1c0a5e9b7d24688d2f4e6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"replica-test","version":"1"}}}"#;

/// The demo server over streamable HTTP, stopped when the token drops.
async fn demo_http() -> (String, tokio_util::sync::DropGuard) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(mcp_ui_gateway::demo::serve_http(listener, stop.clone()));
    (url, stop.drop_guard())
}

/// The JSON-RPC message of a JSON or single-event SSE response.
fn message(headers: &hyper::HeaderMap, body: &[u8]) -> Value {
    let sse = headers
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    if sse {
        let events = parse_sse(body);
        let last = events
            .iter()
            .rev()
            .find(|e| !e.data.is_empty())
            .expect("an event with data");
        last.json().unwrap()
    } else {
        serde_json::from_slice(body).unwrap()
    }
}

async fn replica(upstream: &str) -> TestGateway {
    TestGateway::start_with(Config {
        session_key: Some(KEY.into()),
        upstreams: vec![gw::http("tasks", upstream)],
        ..gw::test_config()
    })
    .await
}

#[tokio::test]
async fn two_replicas_with_one_key_serve_one_session_alternately() {
    let (upstream, _stop) = demo_http().await;
    let a = replica(&upstream).await;
    let b = replica(&upstream).await;

    let (status, headers, body) = post_json(&a.url(), &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        message(&headers, &body)["result"]["serverInfo"]["name"],
        "task-list-demo"
    );
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, _) = post_json(
        &b.url(),
        &session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    for (i, replica) in [&a, &b, &a, &b].into_iter().enumerate() {
        let title = format!("from replica call {i}");
        let call = serde_json::json!({"jsonrpc":"2.0","id":10 + i,"method":"tools/call","params":{"name":"add_task","arguments":{"title":title}}});
        let (status, headers, body) = post_json(&replica.url(), &session, call.to_string()).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "call {i}: {}",
            String::from_utf8_lossy(&body)
        );
        let m = message(&headers, &body);
        assert_eq!(m["id"], 10 + i);
        assert!(
            m["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(&title)
        );
        // The upstream repeats its session id; the client keeps the one it has.
        if let Some(echoed) = headers.get("mcp-session-id") {
            assert_eq!(echoed.to_str().unwrap(), sid);
        }
    }

    // Ending the session through one replica: that replica answers its id
    // 404 from then on, as the protocol says of an ended session. The other
    // replica was not told: to it the upstream's 404 is an upstream that
    // forgot the session, and it opens another in its place (hosts keep
    // stale ids and never start over: claude-code#46533).
    let (status, _, _) = request_raw(Method::DELETE, &b.url(), &session, "").await;
    assert!(status.is_success(), "{status}");
    let (status, _, _) = post_json(
        &b.url(),
        &session,
        r#"{"jsonrpc":"2.0","id":98,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, headers, body) = post_json(
        &a.url(),
        &session,
        r#"{"jsonrpc":"2.0","id":99,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(message(&headers, &body)["result"]["tools"].is_array());

    // A replica with another key cannot open the id.
    let stranger = TestGateway::start(vec![gw::http("tasks", &upstream)]).await;
    let (status, _, _) = post_json(
        &stranger.url(),
        &session,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A stdio session's id is served by any process holding the key: a
/// shared one on that process's own connection, one that owns its child by
/// a child opened there as the client opened the first (after a restart, or
/// behind a load balancer without stickiness).
#[tokio::test]
async fn stdio_sessions_are_served_by_any_process_with_the_key() {
    for up in [
        gw::demo_stdio("tasks"),
        gw::per_client(gw::demo_stdio("tasks")),
    ] {
        let mode = format!("{:?}", up.sessions);
        let config = || Config {
            session_key: Some(KEY.into()),
            upstreams: vec![up.clone()],
            ..gw::test_config()
        };
        let a = TestGateway::start_with(config()).await;
        let b = TestGateway::start_with(config()).await;
        let (_, headers, _) = post_json(&a.url(), &[], INIT).await;
        let sid = headers["mcp-session-id"].to_str().unwrap();
        let (status, headers, body) = post_json(
            &b.url(),
            &[("mcp-session-id", sid)],
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{mode}: {}",
            String::from_utf8_lossy(&body)
        );
        let tools = message(&headers, &body)["result"]["tools"].clone();
        assert!(
            tools.as_array().is_some_and(|t| !t.is_empty()),
            "{mode}: {tools}"
        );
    }
}

#[tokio::test]
async fn http_upstream_bytes_pass_unchanged() {
    let (upstream, _stop) = demo_http().await;
    let g = TestGateway::start(vec![gw::http("tasks", &upstream)]).await;
    // Same requests, direct and through the gateway, each on a fresh session.
    let mut bodies = Vec::new();
    for url in [upstream.clone(), g.url()] {
        let (_, headers, _) = post_json(&url, &[], INIT).await;
        let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let session = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        post_json(
            &url,
            &session,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
        let (_, h, body) = post_json(
            &url,
            &session,
            r#"{"jsonrpc":"2.0","id":"t","method":"tools/list","params":{}}"#,
        )
        .await;
        bodies.push((h.get("content-type").cloned(), message(&h, &body)));
    }
    assert_eq!(bodies[0].0, bodies[1].0, "same content type");
    assert_eq!(
        serde_json::to_string(&bodies[0].1).unwrap(),
        serde_json::to_string(&bodies[1].1).unwrap(),
        "same message, key order included"
    );
}

/// The demo server behind a front that lengthens its session ids to `len`
/// characters (and shortens them back on the way in); records each request's
/// method and the session id it came with.
async fn demo_with_long_ids(
    len: usize,
) -> (
    support::upstreams::Upstream,
    std::sync::Arc<std::sync::Mutex<Vec<(Method, Option<String>)>>>,
    tokio_util::sync::DropGuard,
) {
    use http_body_util::{BodyExt as _, Full};
    let (demo, stop_demo) = demo_http().await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let front = support::upstreams::spawn_server(
        CancellationToken::new(),
        "/mcp",
        move |req: hyper::Request<hyper::body::Incoming>| {
            let (demo, log) = (demo.clone(), log.clone());
            async move {
                let (parts, body) = req.into_parts();
                let sid = parts
                    .headers
                    .get("mcp-session-id")
                    .map(|v| v.to_str().unwrap().to_owned());
                log.lock()
                    .unwrap()
                    .push((parts.method.clone(), sid.clone()));
                let short = sid.as_deref().map(|s| s.split('.').next().unwrap());
                let mut headers: Vec<(&str, &str)> = Vec::new();
                for name in ["content-type", "accept", "mcp-protocol-version"] {
                    if let Some(v) = parts.headers.get(name) {
                        headers.push((name, v.to_str().unwrap()));
                    }
                }
                if let Some(s) = short {
                    headers.push(("mcp-session-id", s));
                }
                let body = body.collect().await.unwrap().to_bytes();
                let (status, h, bytes) = request_raw(parts.method, &demo, &headers, body).await;
                let mut r = hyper::Response::new(Full::new(bytes).boxed());
                *r.status_mut() = status;
                if let Some(ct) = h.get("content-type") {
                    r.headers_mut().insert("content-type", ct.clone());
                }
                if let Some(real) = h.get("mcp-session-id") {
                    let real = real.to_str().unwrap();
                    let long = format!("{real}.{}", "x".repeat(len - real.len() - 1));
                    r.headers_mut()
                        .insert("mcp-session-id", long.parse().unwrap());
                }
                r
            }
        },
    )
    .await
    .unwrap();
    (front, seen, stop_demo)
}

/// An upstream session id of 3,100 characters is carried: the sealed id the
/// gateway hands out is one it accepts back, and the session works.
#[tokio::test]
async fn long_upstream_session_ids_are_carried() {
    let (front, seen, _stop) = demo_with_long_ids(3100).await;
    let g = TestGateway::start(vec![gw::http("tasks", &front.url)]).await;
    let (status, headers, body) = post_json(&g.url(), &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    eprintln!("sealed id of {} characters", sid.len());
    assert!(sid.len() > 4096, "sealed id of {} characters", sid.len());
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, _) = post_json(
        &g.url(),
        &session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, headers, body) = post_json(
        &g.url(),
        &session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let tools = message(&headers, &body)["result"]["tools"].clone();
    assert!(tools.as_array().is_some_and(|t| !t.is_empty()), "{tools}");
    // The upstream got its own long id back each time.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[1..]
            .iter()
            .all(|(_, s)| s.as_ref().unwrap().len() == 3100)
    );
}

/// An upstream session id too long to carry in a header is refused at
/// `initialize`, naming the upstream, and that upstream session is ended.
#[tokio::test]
async fn overlong_upstream_session_ids_are_refused_at_initialize() {
    let (front, seen, _stop) = demo_with_long_ids(5000).await;
    let g = TestGateway::start(vec![gw::http("tasks", &front.url)]).await;
    let started = std::time::Instant::now();
    let (status, headers, body) = post_json(&g.url(), &[], INIT).await;
    eprintln!("initialize refused in {:?}", started.elapsed());
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(!headers.contains_key("mcp-session-id"));
    let m: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(m["id"], 1);
    assert_eq!(m["error"]["code"], -32000);
    let text = m["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("upstream 'tasks'") && text.contains("5000 bytes") && text.contains("4096"),
        "{text}"
    );
    let ended = support::clients::wait_until(std::time::Duration::from_secs(10), || {
        seen.lock()
            .unwrap()
            .iter()
            .any(|(m, s)| *m == Method::DELETE && s.as_ref().is_some_and(|s| s.len() == 5000))
            .then_some(())
    })
    .await;
    assert!(ended.is_some(), "the upstream session was not ended");
    eprintln!("upstream session ended after {:?}", started.elapsed());
}

/// An HTTP upstream that forgot a client's session (it restarted: its 404)
/// gets another, opened as the client opened the first, and the call goes
/// through on it (hosts keep stale ids and never start over:
/// claude-code#46533, #48557); the client's id goes on working. A session
/// the client ended itself stays ended.
#[tokio::test]
async fn an_http_upstream_that_forgot_the_session_gets_another_in_its_place() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/mcp");
    let stop = CancellationToken::new();
    let first = tokio::spawn(mcp_ui_gateway::demo::serve_http(listener, stop.clone()));
    let g = TestGateway::start(vec![gw::http("tasks", &url)]).await;
    let (_, headers, _) = post_json(&g.url(), &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post_json(
        &g.url(),
        &session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    let call = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"list_tasks","arguments":{{}}}}}}"#
        )
    };
    let (status, headers, body) = post_json(&g.url(), &session, call(1)).await;
    assert_eq!(status, StatusCode::OK);
    let before = message(&headers, &body)["result"].clone();
    // The upstream restarts: it knows no session any more.
    stop.cancel();
    let _ = first.await;
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let stop = CancellationToken::new();
    let _second = tokio::spawn(mcp_ui_gateway::demo::serve_http(listener, stop.clone()));
    let _guard = stop.drop_guard();
    for id in 2..5 {
        let (status, headers, body) = post_json(&g.url(), &session, call(id)).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        assert_eq!(message(&headers, &body)["result"], before, "call {id}");
    }
    let metrics = g.gateway.metrics_text().await;
    assert!(
        metrics.contains("mcp_gateway_sessions_revived_total{upstream=\"tasks\"} 1"),
        "{metrics}"
    );
    let (status, _, _) = request_raw(Method::DELETE, &g.url(), &session, "").await;
    assert!(status.is_success());
    let (status, _, _) = post_json(&g.url(), &session, call(9)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "ended by its client");
}

/// A request to a front of `target` sent on as it came (its MCP headers and
/// body), and the answer back with its content type and session id.
async fn relay(
    target: &str,
    parts: hyper::http::request::Parts,
    body: bytes::Bytes,
) -> support::upstreams::BoxResponse {
    use http_body_util::{BodyExt as _, Full};
    let names = [
        "content-type",
        "accept",
        "mcp-protocol-version",
        "mcp-session-id",
    ];
    let headers: Vec<(&str, &str)> = names
        .iter()
        .filter_map(|n| Some((*n, parts.headers.get(*n)?.to_str().ok()?)))
        .collect();
    let (status, h, bytes) = request_raw(parts.method, target, &headers, body).await;
    let mut r = hyper::Response::new(Full::new(bytes).boxed());
    *r.status_mut() = status;
    for name in ["content-type", "mcp-session-id"] {
        if let Some(v) = h.get(name) {
            r.headers_mut().insert(name, v.clone());
        }
    }
    r
}

/// What the upstream saw of one request: its `Authorization` and session id.
type Seen = (Option<String>, Option<String>);

/// In front of a stateful HTTP upstream, requests without a session (the
/// hosts' tool calls) are answered on a session the gateway holds, where
/// directly they would get 400; a held session carries one client's
/// credentials only: two tokens, two upstream sessions, never crossed.
#[tokio::test]
async fn held_sessions_answer_sessionless_requests_and_never_cross_credentials() {
    use http_body_util::BodyExt as _;
    let (demo, _stop) = demo_http().await;
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>> = Default::default();
    let log = seen.clone();
    let front = support::upstreams::spawn_server(
        CancellationToken::new(),
        "/mcp",
        move |req: hyper::Request<hyper::body::Incoming>| {
            let (demo, log) = (demo.clone(), log.clone());
            async move {
                let (parts, body) = req.into_parts();
                let header = |n: &str| parts.headers.get(n).map(|v| v.to_str().unwrap().to_owned());
                log.lock()
                    .unwrap()
                    .push((header("authorization"), header("mcp-session-id")));
                let body = body.collect().await.unwrap().to_bytes();
                relay(&demo, parts, body).await
            }
        },
    )
    .await
    .unwrap();
    let g = TestGateway::start(vec![gw::http("tasks", &front.url)]).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}"#;
    for token in ["Bearer alice", "Bearer bob", "Bearer alice", "Bearer bob"] {
        let (status, headers, body) = post_json(
            &g.url(),
            &[
                ("authorization", token),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            call,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        assert!(message(&headers, &body)["result"]["content"].is_array());
    }
    let seen = seen.lock().unwrap();
    let sessions_of = |token: &str| -> std::collections::BTreeSet<String> {
        seen.iter()
            .filter(|(a, _)| a.as_deref() == Some(token))
            .filter_map(|(_, s)| s.clone())
            .collect()
    };
    let (alice, bob) = (sessions_of("Bearer alice"), sessions_of("Bearer bob"));
    assert_eq!(alice.len(), 1, "one held session for alice: {seen:?}");
    assert_eq!(bob.len(), 1, "one held session for bob: {seen:?}");
    assert!(alice.is_disjoint(&bob), "{seen:?}");
}

/// Two streamable HTTP mounts in front of one upstream, and a third in front
/// of a recorder: a session opened at `/a/mcp` is not one of `b`'s or `c`'s.
/// Presented there it gets 404, and no request reaches `c`'s upstream (on
/// `b`, the upstream would have taken `a`'s upstream session for its own).
#[tokio::test]
async fn a_session_of_one_http_mount_is_unknown_at_another() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use support::upstreams::{BoxResponse, HttpFlavor, plain, spawn_server, start_http};

    let up = start_http(HttpFlavor::StatefulSse).await.unwrap();
    let reached = Arc::new(AtomicUsize::new(0));
    let seen = reached.clone();
    let recorder = spawn_server(
        CancellationToken::new(),
        "/mcp",
        move |_req: hyper::Request<hyper::body::Incoming>| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                let r: BoxResponse = plain(StatusCode::INTERNAL_SERVER_ERROR, "recorded\n");
                r
            }
        },
    )
    .await
    .unwrap();
    let g = TestGateway::start(vec![
        gw::http("a", &up.url),
        gw::http("b", &up.url),
        gw::http("c", &recorder.url),
    ])
    .await;
    let (status, headers, _) = post_json(&g.url_for("/a/mcp"), &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, _) = post_json(&g.url_for("/a/mcp"), &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::OK, "served on its own mount");
    for other in ["/b/mcp", "/c/mcp"] {
        for body in [
            list,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            let (status, _, answer) =
                post_json(&g.url_for(other), &[("mcp-session-id", &sid)], body).await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "{other}: {body}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        for method in [Method::GET, Method::DELETE] {
            let (status, _, _) = request_raw(
                method.clone(),
                &g.url_for(other),
                &[
                    ("mcp-session-id", &sid),
                    ("accept", "text/event-stream, application/json"),
                ],
                "",
            )
            .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {other}");
        }
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "c's upstream was reached with a's session"
    );
    // Still a's.
    let (status, _, _) = post_json(&g.url_for("/a/mcp"), &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::OK);
    g.shutdown().await;
    up.shutdown().await;
    recorder.shutdown().await;
}

/// A session opened at `url` (`initialize`, then `notifications/initialized`):
/// its id, and the body of the answer to `initialize`.
async fn opened(url: &str) -> (String, bytes::Bytes) {
    let (status, headers, body) = post_json(url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, _) = post_json(
        url,
        &[
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    (sid, body)
}

/// What the byte-exact upstream answers for `method` and the request's raw
/// `id`: keys out of order, spacing, escapes, a number past `u64` and
/// `f64` precision, the method named back.
fn odd_answer(method: &str, id: &str) -> String {
    format!(
        "{{\"result\" : {{\"zeta\":1,\"alpha\":[1, 2.50, \"\\u00e9\\ud83d\\ude00\"],\"big\":123456789012345678901234567890,\"nested\":{{ \"b\":null,\"a\":true }},\"content\":[{{\"type\":\"text\",\"text\":\"{method}\"}}]}},\"id\":{id} , \"jsonrpc\":\"2.0\"}}"
    )
}

/// The answer's whole body for `id`: JSON as [`odd_answer`], or (`sse`: a
/// request whose `_meta.form` is `"sse"`) an SSE stream: a comment, an
/// event with an id, an event name and the message's `data` split over two
/// lines.
fn odd_body(method: &str, id: &str, sse: bool) -> (&'static str, String) {
    let answer = odd_answer(method, id);
    if sse {
        let (head, tail) = answer.split_at(answer.find("\"alpha\"").unwrap());
        (
            "text/event-stream",
            format!(": keep\n\nid: up-ev-7\nevent: message\ndata: {head}\ndata: {tail}\n\n"),
        )
    } else {
        ("application/json", answer)
    }
}

/// Every answer form of an HTTP upstream, byte for byte: whatever the
/// gateway does not rewrite reaches the client as the upstream wrote it
/// (JSON with its spacing, key order, escapes and long numbers; SSE with its
/// event ids and names, its comments and its data lines), for every method
/// it does not own, on a mount without overlays.
#[tokio::test]
async fn http_answers_pass_byte_for_byte() {
    use http_body_util::{BodyExt, Full};
    use support::upstreams::{BoxResponse, spawn_server};

    let stop = CancellationToken::new();
    let up = spawn_server(
        stop.clone(),
        "/mcp",
        |req: hyper::Request<hyper::body::Incoming>| async move {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let method = v["method"].as_str().unwrap_or_default().to_owned();
            let mut r: BoxResponse;
            if v.get("id").is_none() {
                r = hyper::Response::new(Full::new(bytes::Bytes::new()).boxed());
                *r.status_mut() = StatusCode::ACCEPTED;
                return r;
            }
            // The id as the request wrote it.
            let raw: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
                serde_json::from_slice(&body).unwrap();
            let id = raw["id"].get().to_owned();
            let (content_type, text) = if method == "initialize" {
                (
                    "application/json",
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{{\"tools\":{{}},\"x-odd\":{{\"k\":[3,2,1]}}}},\"serverInfo\":{{\"name\":\"odd\",\"version\":\"1\"}}}}}}"
                    ),
                )
            } else {
                // The form the client asked for: its id may not reach the
                // upstream as written (a shared session's are the
                // connection's own).
                odd_body(&method, &id, v["params"]["_meta"]["form"] == "sse")
            };
            r = hyper::Response::new(Full::new(bytes::Bytes::from(text)).boxed());
            r.headers_mut()
                .insert("content-type", content_type.parse().unwrap());
            r.headers_mut()
                .insert("mcp-session-id", "up-1".parse().unwrap());
            r
        },
    )
    .await
    .unwrap();
    // Per client session (the default for a streamable HTTP upstream), and
    // with the clients sharing the gateway's sessions: there an SSE answer
    // is read whole and sent as JSON, the message itself unchanged (its
    // `data` lines joined), its event id and name not kept.
    for shared in [false, true] {
        let mut odd = gw::http("odd", &up.url);
        if shared {
            odd.sessions = Some(mcp_ui_model::config::SessionMode::Shared);
        }
        let g = TestGateway::start(vec![odd]).await;
        let (sid, body) = opened(&g.url()).await;
        assert!(
            String::from_utf8_lossy(&body).contains("\"x-odd\":{\"k\":[3,2,1]}"),
            "{}",
            String::from_utf8_lossy(&body)
        );
        let session = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let mut n = 0;
        for method in [
            "ping",
            "tools/call",
            "resources/read",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
            "resources/templates/list",
            "x-vendor/odd",
        ] {
            for form in ["json", "sse"] {
                n += 1;
                let id = format!("\"r{n}-{form}\"");
                let params = match method {
                    "tools/call" => r#"{"name":"echo","arguments":{"text":"é"}}"#,
                    "resources/read" => r#"{"uri":"file:///odd.txt"}"#,
                    "prompts/get" => r#"{"name":"odd"}"#,
                    _ => "{}",
                };
                let mut params: Value = serde_json::from_str(params).unwrap();
                params["_meta"] = json!({ "form": form });
                let request = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
                );
                let (status, h, body) = post_json(&g.url(), &session, request).await;
                assert_eq!(status, StatusCode::OK, "{method} {form}");
                let (mut content_type, mut want) = odd_body(method, &id, form == "sse");
                if shared && form == "sse" {
                    content_type = "application/json";
                    want = odd_answer(method, &id).replacen("\"alpha\"", "\n\"alpha\"", 1);
                }
                assert_eq!(
                    h["content-type"].to_str().unwrap(),
                    content_type,
                    "{method} {form}"
                );
                assert_eq!(
                    String::from_utf8_lossy(&body),
                    want,
                    "{method} {form} (shared: {shared}): the upstream's bytes"
                );
            }
        }
        g.shutdown().await;
    }
    stop.cancel();
}

/// The same odd answers from a stdio upstream (one JSON-RPC message a line,
/// as a server writes it): each reaches the client as the line was written,
/// its id put back where it was.
#[tokio::test]
async fn stdio_answers_pass_byte_for_byte() {
    let script = r#"
import json, os, sys
template = os.environ["ODD_TEMPLATE"]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m:
        continue
    if m["method"] == "initialize":
        out = json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "odd", "version": "1"}}})
    else:
        out = template.replace("{M}", m["method"]).replace("{I}", json.dumps(m["id"]))
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
"#;
    let mut odd = gw::stdio("odd", "python3", &["-c", script]);
    odd.env
        .insert("ODD_TEMPLATE".into(), odd_answer("{M}", "{I}"));
    let g = TestGateway::start(vec![odd]).await;
    let (sid, _) = opened(&g.url()).await;
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    for (n, method) in [
        "ping",
        "tools/call",
        "resources/read",
        "prompts/get",
        "x-vendor/odd",
    ]
    .into_iter()
    .enumerate()
    {
        for id in [format!("\"s{n}\""), format!("{}", 7_000 + n)] {
            let request =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{}}}}"#);
            let (status, h, body) = post_json(&g.url(), &session, request).await;
            assert_eq!(status, StatusCode::OK, "{method}");
            assert_eq!(h["content-type"].to_str().unwrap(), "application/json");
            assert_eq!(
                String::from_utf8_lossy(&body),
                odd_answer(method, &id),
                "{method} id {id}: the line as the upstream wrote it"
            );
        }
    }
    g.shutdown().await;
}

/// Ten requests at once with the id of a session whose process is gone (another
/// gateway process issued it, with the same `session_key`) open it again once between
/// them: one child, not ten, and every request answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_id_is_revived_once_however_many_requests_find_it_gone() {
    let config = || {
        let mut up = gw::stdio(
            "fx",
            support::upstreams::STDIO_COMMAND,
            &["--protocol", "2025"],
        );
        up.sessions = Some(mcp_ui_model::config::SessionMode::Client);
        Config {
            session_key: Some("ab".repeat(32)),
            upstreams: vec![up],
            ..gw::test_config()
        }
    };
    let first = TestGateway::start_with(config()).await;
    let (sid, _) = opened(&first.url()).await;
    first.shutdown().await;
    let second = TestGateway::start_with(config()).await;
    let url = second.url();
    let calls = (0..10).map(|i| {
        let (url, sid) = (url.clone(), sid.clone());
        async move {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{i}"}}}}}}"#
            );
            let headers = [
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ];
            post_json(&url, &headers, body).await.0
        }
    });
    let statuses = futures_util::future::join_all(calls).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::OK),
        "{statuses:?}"
    );
    assert_eq!(
        second.gateway.upstreams.children.running(),
        1,
        "one child for the one session opened again"
    );
}

/// 2,000 junk bearer tokens once opened 2,006 upstream sessions, each held
/// until its idle limit: a mount holds at most `limits.max_mount_connections`
/// sessions for callers, the least recently used idle one ended (with a
/// DELETE upstream) for a new one, so junk tokens churn among themselves and
/// the upstream's sessions stay within the limit.
#[tokio::test]
async fn held_sessions_stay_within_the_mounts_limit_the_least_recently_used_ending() {
    use http_body_util::BodyExt as _;
    use std::sync::{Arc, Mutex};
    use support::upstreams::{HttpFlavor, plain, start_http};
    let up = start_http(HttpFlavor::StatefulSse).await.unwrap();
    // What reached the upstream: sessions opened, and ended with a DELETE.
    let counts: Arc<Mutex<(usize, usize)>> = Arc::default();
    let log = counts.clone();
    let target = up.url.clone();
    let front = support::upstreams::spawn_server(
        CancellationToken::new(),
        "/mcp",
        move |req: hyper::Request<hyper::body::Incoming>| {
            let (target, log) = (target.clone(), log.clone());
            async move {
                if req.method() == Method::GET {
                    return plain(StatusCode::METHOD_NOT_ALLOWED, "no GET stream here");
                }
                let (parts, body) = req.into_parts();
                let body = body.collect().await.unwrap().to_bytes();
                if parts.method == Method::DELETE {
                    log.lock().unwrap().1 += 1;
                } else if String::from_utf8_lossy(&body).contains(r#""method":"initialize""#) {
                    log.lock().unwrap().0 += 1;
                }
                relay(&target, parts, body).await
            }
        },
    )
    .await
    .unwrap();
    let mut config = Config {
        upstreams: vec![gw::http("tasks", &front.url)],
        ..gw::test_config()
    };
    config.limits.max_mount_connections = 8;
    let g = TestGateway::start_with(config).await;
    let call = |text: &str| {
        json!({"jsonrpc":"2.0","id":text,"method":"tools/call",
            "params":{"name":"echo","arguments":{"text":text}}})
        .to_string()
    };
    let post = |token: String, text: String| {
        let url = g.url();
        async move {
            let auth = format!("Bearer {token}");
            let headers = [
                ("authorization", auth.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ];
            let (status, headers, body) = post_json(&url, &headers, call(&text)).await;
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
            assert_eq!(
                message(&headers, &body)["result"]["content"][0]["text"],
                text
            );
        }
    };
    post("alice".into(), "alice's first".into()).await;
    for i in 0..40 {
        post(format!("junk-{i}"), format!("junk {i}")).await;
        let (live, _, _) = g.gateway.upstreams.pools[0].counts();
        assert!(
            live <= 8,
            "{live} upstream sessions held after {} tokens",
            i + 2
        );
    }
    let ended = support::clients::wait_until(std::time::Duration::from_secs(10), || {
        let (opened, deleted) = *counts.lock().unwrap();
        (opened - deleted <= 8).then_some((opened, deleted))
    })
    .await;
    let (opened, deleted) = *counts.lock().unwrap();
    assert!(
        ended.is_some(),
        "{opened} upstream sessions opened, {deleted} ended with a DELETE: more than 8 left open"
    );
    assert_eq!(opened, 41, "one session per token");
    // A new token still gets a session: room is made, nobody is refused.
    post("bob".into(), "bob's".into()).await;
}
