//! `/metrics`: exact counts after a known sequence, outcomes read from
//! HTTP answers, reloads by result, an abandoned request as `cancelled`,
//! sessions, connections, processes and revivals, and the exposition parser
//! the checks rely on refusing what is malformed.

use super::*;

// The known sequence

#[tokio::test]
async fn metrics_count_a_known_sequence_exactly() {
    // A session that owns its child: its DELETE ends the child.
    let gateway =
        TestGateway::start(vec![gw::per_client(gw::stdio("fx", STDIO_COMMAND, &[]))]).await;
    let url = gateway.url();

    // initialize (the client's request id is echoed)
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let (status, headers, body) = post_json(&url, &[("x-request-id", "ops-init-1")], init).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers["x-request-id"], "ops-init-1");
    assert!(body_json(&body)["result"]["serverInfo"].is_object());
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", PROTOCOL),
    ];

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, _) = post_json(&url, &session, initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (status, _, body) = post_json(&url, &session, request(2, "tools/list", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body_json(&body)["result"]["tools"].is_array());

    for i in 0..3 {
        let call = request(
            10 + i,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": format!("hello {i}")}}),
        );
        let (status, headers, body) = post_json(&url, &session, call).await;
        assert_eq!(status, StatusCode::OK);
        let answer = body_json(&body);
        assert!(answer["result"].is_object(), "{answer}");
        // generated: 16 hex digits
        let rid = headers["x-request-id"].to_str().unwrap();
        assert!(
            rid.len() == 16 && rid.bytes().all(|b| b.is_ascii_hexdigit()),
            "{rid:?}"
        );
    }

    let unknown = request(
        20,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    let (status, _, body) = post_json(&url, &session, unknown).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body_json(&body)["error"]["code"].is_i64(),
        "an error answer"
    );

    // A forged session id: 404, with a request id all the same.
    let forged = [
        ("mcp-session-id", "forged-session-id"),
        ("mcp-protocol-version", PROTOCOL),
        ("x-request-id", "forged-1"),
    ];
    let (status, headers, _) = post_json(&url, &forged, request(30, "tools/list", json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["x-request-id"], "forged-1");

    let (text, samples) = scrape(&gateway).await;
    let requests = |method: &str, outcome: &str| {
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[("upstream", "fx"), ("method", method), ("outcome", outcome)],
        )
    };
    assert_eq!(requests("initialize", "ok"), Some(1.0), "{text}");
    assert_eq!(
        requests("notifications/initialized", "ok"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(requests("tools/list", "ok"), Some(1.0), "{text}");
    assert_eq!(requests("tools/list", "http_4xx"), Some(1.0), "{text}");
    assert_eq!(requests("tools/call", "ok"), Some(3.0), "{text}");
    assert_eq!(requests("tools/call", "jsonrpc_error"), Some(1.0), "{text}");
    let total: f64 = samples
        .iter()
        .filter(|s| s.name == "mcp_gateway_requests_total")
        .map(|s| s.value)
        .sum();
    assert_eq!(total, 8.0, "nothing else was counted:\n{text}");

    let status = |code: &str| {
        value(
            &samples,
            "mcp_gateway_http_requests_total",
            &[("status", code)],
        )
    };
    assert_eq!(status("200"), Some(6.0), "{text}");
    assert_eq!(status("202"), Some(1.0), "{text}");
    assert_eq!(status("404"), Some(1.0), "{text}");

    assert_eq!(
        check_histograms(&samples, "mcp_gateway_request_duration_seconds"),
        4,
        "one series per (upstream, method) seen:\n{text}"
    );
    let calls = [("upstream", "fx"), ("method", "tools/call")];
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_request_duration_seconds_count",
            &calls
        ),
        Some(4.0)
    );
    let sum = value(&samples, "mcp_gateway_request_duration_seconds_sum", &calls).unwrap();
    assert!(sum > 0.0 && sum < 4.0 * 20.0, "tools/call _sum {sum}");

    assert_eq!(
        value(&samples, "mcp_gateway_sessions_open", &[("upstream", "fx")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_stdio_children", &[]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_overlay_reloads_total",
            &[("result", "error")]
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );

    // End the session: counted as DELETE, and the child goes away.
    let (status, _, _) = request_raw(Method::DELETE, &url, &session, "").await;
    assert!(status.is_success(), "DELETE answered {status}");
    let deadline = Instant::now() + SETTLE_LIMIT;
    let samples = loop {
        let (_, samples) = scrape(&gateway).await;
        let children = value(&samples, "mcp_gateway_stdio_children", &[]);
        if children == Some(0.0) || Instant::now() > deadline {
            break samples;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        value(&samples, "mcp_gateway_stdio_children", &[]),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "mcp_gateway_sessions_open", &[("upstream", "fx")]),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[("upstream", "fx"), ("method", "DELETE"), ("outcome", "ok")]
        ),
        Some(1.0)
    );

    // Ready: the upstream answers a real MCP exchange.
    let (status, headers, body) =
        request_raw(Method::GET, &gateway.url_for("/readyz"), &[], "").await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.starts_with("ready\n"), "{body}");
    assert!(headers.contains_key("x-request-id"));
    let (_, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_up", &[("upstream", "fx")]),
        Some(1.0)
    );
    gateway.shutdown().await;
}

/// Outcomes read from a streamable HTTP upstream's answers: an SSE answer's
/// last event (a result, a JSON-RPC error), and a timeout.
#[tokio::test]
async fn metrics_read_outcomes_from_http_answers() {
    let sse_upstream = upstreams::start_http(HttpFlavor::StatefulSse)
        .await
        .expect("fixture upstream");
    let gateway = TestGateway::start(vec![gw::http("sse", &sse_upstream.url)]).await;
    let url = gateway.url();
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let (status, headers, _) = post_json(&url, &[], init).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", PROTOCOL),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, _) = post_json(&url, &session, initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    for (id, tool) in [(2, "echo"), (3, "no_such_tool")] {
        let call = request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": {"text": "hi"}}),
        );
        let (status, headers, _) = post_json(&url, &session, call).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream"),
            "the fixture answers in SSE"
        );
    }
    let (text, samples) = scrape(&gateway).await;
    let requests = |method: &str, outcome: &str| {
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[
                ("upstream", "sse"),
                ("method", method),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(requests("initialize", "ok"), Some(1.0), "{text}");
    assert_eq!(requests("tools/call", "ok"), Some(1.0), "{text}");
    assert_eq!(requests("tools/call", "jsonrpc_error"), Some(1.0), "{text}");
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_sessions_open",
            &[("upstream", "sse")]
        ),
        Some(0.0),
        "HTTP sessions live in their ids"
    );
    gateway.shutdown().await;
    sse_upstream.shutdown().await;

    // A JSON upstream that answers after the request timeout.
    let json_upstream = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .expect("fixture upstream");
    let mut config = gw::test_config();
    config.upstreams = vec![gw::http("slow", &json_upstream.url)];
    config.limits.request_timeout_secs = 2;
    let gateway = TestGateway::start_with(config).await;
    let call = request(
        4,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 10_000}}),
    );
    let (status, _, body) =
        post_json(&gateway.url(), &[("mcp-protocol-version", PROTOCOL)], call).await;
    assert_eq!(status, StatusCode::OK);
    let answer = body_json(&body);
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not answer within")),
        "{answer}"
    );
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[
                ("upstream", "slow"),
                ("method", "tools/call"),
                ("outcome", "timeout")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    gateway.shutdown().await;
    json_upstream.shutdown().await;
}

#[tokio::test]
async fn overlay_reloads_are_counted_by_result() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::http("gone", &format!("http://127.0.0.1:{port}/mcp"))];
    let gateway = TestGateway::start_with(config).await;
    let live = &gateway.gateway.live;
    live.reload().expect("an empty directory reloads");
    std::fs::write(overlays.join("gone.toml"), "this is = = not TOML\n").unwrap();
    assert!(live.reload().is_err(), "a broken file fails the reload");
    let (text, samples) = scrape(&gateway).await;
    let reloads = |result: &str| {
        value(
            &samples,
            "mcp_gateway_overlay_reloads_total",
            &[("result", result)],
        )
    };
    // (No watcher runs in the test gateway: these are the two reloads above.)
    assert_eq!(reloads("ok"), Some(1.0), "{text}");
    assert_eq!(reloads("error"), Some(1.0), "{text}");
    gateway.shutdown().await;
}

/// A client that goes away before its answer: counted as `cancelled`.
#[tokio::test]
async fn an_abandoned_request_counts_as_cancelled() {
    let upstream = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .expect("fixture upstream");
    let gateway = TestGateway::start(vec![gw::http("slow", &upstream.url)]).await;
    let call = request(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 20_000}}),
    );
    let url = gateway.url();
    let abandoned = tokio::time::timeout(
        Duration::from_millis(500),
        post_json(&url, &[("mcp-protocol-version", PROTOCOL)], call),
    )
    .await;
    assert!(abandoned.is_err(), "the slow call answered early");
    let cancelled = [
        ("upstream", "slow"),
        ("method", "tools/call"),
        ("outcome", "cancelled"),
    ];
    let deadline = Instant::now() + SETTLE_LIMIT;
    let (text, samples) = loop {
        let (text, samples) = scrape(&gateway).await;
        let seen = value(&samples, "mcp_gateway_requests_total", &cancelled).is_some();
        if seen || Instant::now() > deadline {
            break (text, samples);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        value(&samples, "mcp_gateway_requests_total", &cancelled),
        Some(1.0),
        "{text}"
    );
    gateway.shutdown().await;
    upstream.cancel();
}

#[test]
fn the_parser_rejects_malformed_exposition() {
    for bad in [
        "# TYPE a counter\na{x=\"1} 1\n",
        "# TYPE a counter\na{x=1} 1\n",
        "# TYPE a counter\na 1 2 3\n",
        "b 1\n",
        "# TYPE a counter\na{x=\"\\q\"} 1\n",
        "# TYPE a counter\na one\n",
    ] {
        let outcome = std::panic::catch_unwind(|| parse_exposition(bad));
        assert!(outcome.is_err(), "accepted {bad:?}");
    }
    let ok = parse_exposition(
        "# HELP a x\n# TYPE a counter\na{x=\"q\\\"\\\\\\n\",y=\"\"} 1.5\na 2 1700000000\n",
    );
    assert_eq!(ok[0].labels["x"], "q\"\\\n");
    assert_eq!(ok[1].value, 2.0);
}

/// What `/metrics` says of sessions on a shared stdio mount: client
/// sessions and upstream connections now, processes started and sessions
/// revived since the start: three sessions and a sessionless call on one
/// child; the child killed, the next call revives it on a second.
#[tokio::test]
async fn metrics_count_client_sessions_connections_processes_and_revivals() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec {STDIO_COMMAND}", pids.display());
    let gateway = TestGateway::start(vec![gw::stdio("fx", "sh", &["-c", &script])]).await;
    let url = gateway.url();
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let mut sids = Vec::new();
    for _ in 0..3 {
        let (status, headers, _) = post_json(&url, &[], init.clone()).await;
        assert_eq!(status, StatusCode::OK);
        sids.push(headers["mcp-session-id"].to_str().unwrap().to_owned());
    }
    let echo = request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let (status, _, _) = post_json(&url, &[], echo.clone()).await;
    assert_eq!(status, StatusCode::OK);
    let fx = [("upstream", "fx")];
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_client_sessions", &fx),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_connections", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_processes_started_total", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_sessions_revived_total", &fx),
        Some(0.0),
        "{text}"
    );
    // The child dies; the next call (of a session) starts another.
    let pid: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(support::process::signal("KILL", &[pid]));
    assert!(support::process::wait_gone(vec![pid], Duration::from_secs(10)).is_empty());
    let gone = support::clients::wait_until(Duration::from_secs(10), || {
        (gateway.gateway.upstreams.children.running() == 0).then_some(())
    })
    .await;
    assert!(gone.is_some());
    let (status, _, body) = post_json(&url, &[("mcp-session-id", sids[0].as_str())], echo).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body_json(&body)["result"]["content"][0]["text"],
        "hi",
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_processes_started_total", &fx),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_sessions_revived_total", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_connections", &fx),
        Some(1.0),
        "{text}"
    );
}
