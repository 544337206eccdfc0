//! Sessions with HTTP upstreams live in their sealed ids: replicas that share
//! a key serve one client alternately, and an upstream that forgets a session
//! makes the client start over rather than silently getting a new one.

mod support;

use hyper::{Method, StatusCode};
use mcp_ui_gateway::config::Config;
use serde_json::Value;
use support::clients::{parse_sse, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use tokio_util::sync::CancellationToken;

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

    // Ending the session through one replica ends it for the other too: the
    // upstream's 404 reaches the client, which must initialize again.
    let (status, _, _) = request_raw(Method::DELETE, &b.url(), &session, "").await;
    assert!(status.is_success(), "{status}");
    let (status, _, _) = post_json(
        &a.url(),
        &session,
        r#"{"jsonrpc":"2.0","id":99,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

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

#[tokio::test]
async fn stdio_sessions_belong_to_their_process() {
    let config = || Config {
        session_key: Some(KEY.into()),
        upstreams: vec![gw::demo_stdio("tasks")],
        ..gw::test_config()
    };
    let a = TestGateway::start_with(config()).await;
    let b = TestGateway::start_with(config()).await;
    let (_, headers, _) = post_json(&a.url(), &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap();
    let (status, _, body) = post_json(
        &b.url(),
        &[("mcp-session-id", sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(String::from_utf8_lossy(&body).contains("another gateway process"));
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
