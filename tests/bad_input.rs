//! Bad input and broken upstreams: each gets a clear status or JSON-RPC error,
//! and the gateway keeps serving afterwards.

use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use support::clients::{body_json, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};

use crate::support;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bad-input-test","version":"1"}}}"#;

/// A fresh session still works: the gateway survived whatever came before.
async fn assert_still_serving(url: &str) {
    let (status, headers, body) = post_json(url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(headers.contains_key("mcp-session-id"));
    assert_eq!(
        body_json(&body)["result"]["serverInfo"]["name"],
        "task-list-demo"
    );
}

fn error_code(body: &[u8]) -> i64 {
    body_json(body)["error"]["code"]
        .as_i64()
        .expect("a JSON-RPC error")
}

#[tokio::test]
async fn malformed_and_invalid_messages_are_rejected_clearly() {
    let g = TestGateway::start(vec![gw::demo_stdio("demo")]).await;
    let url = g.url();

    let (status, _, body) = post_json(&url, &[], "{\"jsonrpc\":\"2.0\",").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), -32700);
    assert!(body_json(&body)["id"].is_null());

    for not_rpc in [
        r#"{"hello":"world"}"#,
        r#"[1,2]"#,
        r#""text""#,
        r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
        "[]",
    ] {
        let (status, _, body) = post_json(&url, &[], not_rpc).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{not_rpc}");
        assert_eq!(error_code(&body), -32600, "{not_rpc}");
    }

    let (status, _, body) = post_json(&url, &[("content-type", "text/plain")], INIT).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(String::from_utf8_lossy(&body).contains("application/json"));

    let (status, _, _) = post_json(&url, &[("accept", "application/json")], INIT).await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    let (status, _, _) = post_json(&url, &[("accept", "text/html")], INIT).await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    let (status, _, _) =
        request_raw(Method::GET, &url, &[("accept", "application/json")], "").await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);

    let (status, _, _) = request_raw(Method::PUT, &url, &[], "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, _, _) = post_json(&g.url_for("/elsewhere"), &[], INIT).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    assert_still_serving(&url).await;
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let mut config = gw::test_config();
    config.upstreams = vec![gw::demo_stdio("demo")];
    config.limits.max_body_bytes = 64 * 1024;
    let g = TestGateway::start_with(config).await;
    let big = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add_task","arguments":{"title":"x".repeat(100_000)}}});
    let (status, _, body) = post_json(&g.url(), &[], big.to_string()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(String::from_utf8_lossy(&body).contains("limits.max_body_bytes"));
    assert_still_serving(&g.url()).await;
}

#[tokio::test]
async fn unknown_and_forged_sessions_get_404() {
    let g = TestGateway::start(vec![gw::demo_stdio("demo")]).await;
    let url = g.url();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    for forged in ["nope", "AAAA", &"A".repeat(120), "../../etc/passwd"] {
        let (status, _, body) = post_json(&url, &[("mcp-session-id", forged)], list).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{forged}");
        assert_eq!(error_code(&body), -32001);
    }
    // A real id, tampered with by one character.
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let mut tampered = sid.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (status, _, _) = post_json(&url, &[("mcp-session-id", &tampered)], list).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // An id sealed by another gateway (another key) does not open here.
    let other = TestGateway::start(vec![gw::demo_stdio("demo")]).await;
    let (_, headers, _) = post_json(&other.url(), &[], INIT).await;
    let foreign = headers["mcp-session-id"].to_str().unwrap();
    let (status, _, _) = post_json(&url, &[("mcp-session-id", foreign)], list).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A deleted session is gone.
    let (status, _, _) = request_raw(Method::DELETE, &url, &[("mcp-session-id", &sid)], "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_still_serving(&url).await;
}

#[tokio::test]
async fn dns_rebinding_and_cors() {
    let g = TestGateway::start(vec![gw::demo_stdio("demo")]).await;
    let url = g.url();
    let (status, _, _) = post_json(&url, &[("host", "evil.example:8787")], INIT).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = post_json(&url, &[("origin", "https://evil.example")], INIT).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (status, headers, _) = post_json(&url, &[("origin", "http://localhost:5173")], INIT).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let exposed = headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id") && exposed.contains("www-authenticate"));

    let (status, headers, _) = request_raw(
        Method::OPTIONS,
        &url,
        &[
            ("origin", "http://localhost:5173"),
            ("access-control-request-method", "POST"),
        ],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let allowed = headers["access-control-allow-headers"].to_str().unwrap();
    for h in [
        "authorization",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ] {
        assert!(allowed.contains(h), "{h} in {allowed}");
    }
}

#[tokio::test]
async fn upstream_down_is_a_json_rpc_error_naming_it() {
    // Nothing listens there (held to the end, so nothing can).
    let closed = support::process::ClosedPort::new();
    let port = closed.port();
    let g = TestGateway::start(vec![gw::http(
        "billing",
        &format!("http://127.0.0.1:{port}/mcp"),
    )])
    .await;
    let started = Instant::now();
    let (status, _, body) = post_json(&g.url(), &[], INIT).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(status, StatusCode::OK);
    let v = body_json(&body);
    assert_eq!(v["id"], 1);
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("upstream 'billing'"), "{message}");

    // The same for a stdio command that cannot start and an SSE URL nobody serves.
    let g = TestGateway::start(vec![gw::stdio("ghost", "/nonexistent/mcp-server", &[])]).await;
    let (_, _, body) = post_json(&g.url(), &[], INIT).await;
    assert!(
        body_json(&body)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upstream 'ghost'")
    );
    let g = TestGateway::start(vec![gw::sse(
        "old",
        &format!("http://127.0.0.1:{port}/sse"),
    )])
    .await;
    let (_, _, body) = post_json(&g.url(), &[], INIT).await;
    assert!(
        body_json(&body)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upstream 'old'")
    );
}

/// A child that dies under a call fails that call, naming the upstream, at
/// once; the client's session goes on, its next request on a new child
/// (hosts never start over by themselves: claude-code#46533).
#[tokio::test]
async fn stdio_child_exiting_mid_call_fails_the_call_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("crashed");
    let id = gw::SH_ID;
    // The first child answers initialize, takes the next two messages, then
    // dies; the next answers every request.
    let script = format!(
        r#"if [ -e '{mark}' ]; then
             while read l; do case "$l" in *'"id":'*) {id}; case "$l" in *'"initialize"'*) echo '{{"jsonrpc":"2.0","id":'"$id"',"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"fragile","version":"1"}}}}}}';; *) echo '{{"jsonrpc":"2.0","id":'"$id"',"result":{{}}}}';; esac;; esac; done
           else
             touch '{mark}'; read l; {id}; echo '{{"jsonrpc":"2.0","id":'"$id"',"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"fragile","version":"0"}}}}}}'; read l; read l; exit 3
           fi"#,
        mark = mark.display()
    );
    for up in [
        gw::stdio("fragile", "sh", &["-c", &script]),
        gw::per_client(gw::stdio("fragile", "sh", &["-c", &script])),
    ] {
        let _ = std::fs::remove_file(&mark);
        let mode = format!("{:?}", up.sessions);
        let g = TestGateway::start(vec![up]).await;
        let url = g.url();
        let (status, headers, _) = post_json(&url, &[], INIT).await;
        assert_eq!(status, StatusCode::OK, "{mode}");
        let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let (status, _, _) = post_json(
            &url,
            &[("mcp-session-id", &sid)],
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let started = Instant::now();
        let (status, _, body) = post_json(
            &url,
            &[("mcp-session-id", &sid)],
            r#"{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"x"}}"#,
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(5), "no hang");
        assert_eq!(status, StatusCode::OK);
        let v = body_json(&body);
        assert_eq!(v["id"], "call-1");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("upstream 'fragile'") && message.contains("exit"),
            "{mode}: {message}"
        );
        // The session goes on: its next request reaches a new child.
        let (status, _, body) = post_json(
            &url,
            &[("mcp-session-id", &sid)],
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{mode}");
        assert_eq!(
            body_json(&body),
            serde_json::json!({"jsonrpc":"2.0","id":3,"result":{}}),
            "{mode}"
        );
    }
}

#[tokio::test]
async fn protocol_headers_are_checked_for_stdio_mounts() {
    let g = TestGateway::start(vec![gw::demo_stdio("demo")]).await;
    let url = g.url();
    let (status, _, _) = post_json(&url, &[("mcp-protocol-version", "1999-01-01")], INIT).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, body) = post_json(&url, &[("mcp-method", "tools/list")], INIT).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), -32020);
    // A GET without a session (ChatGPT's after a long idle: forum thread
    // 1367543) gets a stream of what is said to every client, not a 405
    // the host loops on; a DELETE without one does not exist.
    let (status, headers, _events) =
        support::clients::open_sse(Method::GET, &url, &[("accept", "text/event-stream")], "")
            .await
            .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let (status, _, _) = request_raw(Method::DELETE, &url, &[], "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

/// A 2025-03-26 batch in which two requests share an id cannot be asked of
/// an upstream unambiguously (answers are told apart by id): it is refused
/// whole, 400 with a -32600 error for each of its requests, whatever the
/// transport, and the session goes on.
#[tokio::test]
async fn batches_with_a_repeated_id_get_an_error_for_every_request() {
    use support::clients::parse_sse;
    use support::upstreams::{self, HttpFlavor, STDIO_COMMAND};

    let http = upstreams::start_http(HttpFlavor::StatefulSse)
        .await
        .unwrap();
    let g = TestGateway::start(vec![
        gw::stdio("stdio", STDIO_COMMAND, &["--protocol", "2025"]),
        gw::http("http", &http.url),
    ])
    .await;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batch","version":"1"}}}"#;
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/roots/list_changed"},
        {"jsonrpc":"2.0","id":"a","method":"tools/list"},
        {"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#;
    // A JSON answer, or the last data event of an SSE one.
    let answer = |h: &hyper::HeaderMap, body: &[u8]| -> Value {
        if h["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
        {
            let events = parse_sse(body);
            let last = events.iter().rev().find(|e| !e.data.is_empty()).unwrap();
            last.json().unwrap()
        } else {
            body_json(body)
        }
    };
    for mount in ["stdio", "http"] {
        let url = g.url_for(&format!("/{mount}/mcp"));
        let (status, headers, body) = post_json(&url, &[], init).await;
        assert_eq!(status, StatusCode::OK, "{mount}: {body:?}");
        let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let session = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-03-26"),
        ];
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let (status, _, _) = post_json(&url, &session, initialized).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{mount}");

        let started = Instant::now();
        let (status, headers, body) = post_json(&url, &session, batch).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{mount}: {}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(headers["content-type"], "application/json", "{mount}");
        let answers = body_json(&body);
        let answers = answers.as_array().expect("one answer per request");
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [&json!(1), &json!("a"), &json!(1)], "{mount}");
        for a in answers {
            assert_eq!(a["error"]["code"], -32600, "{mount}: {a}");
            let text = a["error"]["message"].as_str().unwrap();
            assert!(text.contains("id 1"), "{mount}: {text}");
        }
        let took = started.elapsed();
        eprintln!("{mount}: batch with a repeated id refused in {took:?}");
        assert!(took < Duration::from_secs(5), "{mount}");

        let (status, headers, body) = post_json(
            &url,
            &session,
            r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{mount}");
        let m = answer(&headers, &body);
        assert_eq!(m["id"], 9, "{mount}: {m}");
        assert!(m.get("result").is_some(), "{mount}: {m}");
    }
}

/// `resources/read` of a `ui://` URI nobody serves — a widget version that expired after
/// a reload, or a name no overlay defines — is MCP's own "Resource not found" (-32002,
/// with the URI), not the upstream's "Method not found" of a server without resources.
#[tokio::test]
async fn unknown_and_expired_ui_resources_are_resource_not_found() {
    let mut config = gw::test_config();
    config.overlays = concat!(env!("CARGO_MANIFEST_DIR"), "/overlays").into();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    for uri in [
        "ui://task-board/0000000000000000.html",
        "ui://no-such-widget/index.html",
    ] {
        let read = json!({ "jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": { "uri": uri } });
        let (status, _, body) =
            post_json(&url, &[("mcp-session-id", &sid)], read.to_string()).await;
        assert_eq!(status, StatusCode::OK);
        let error = &body_json(&body)["error"];
        assert_eq!(
            error,
            &json!({ "code": -32002, "message": "Resource not found", "data": { "uri": uri } }),
            "{uri}"
        );
    }
    // Any other URI still reaches the upstream, which answers for itself.
    let read = r#"{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///x"}}"#;
    let (_, _, body) = post_json(&url, &[("mcp-session-id", &sid)], read).await;
    assert_eq!(error_code(&body), -32601);
}
