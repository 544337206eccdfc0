//! SSE answers that break: an upstream resetting mid-stream or mid-event,
//! hanging, or sending an event over the limit; GET streams resumed by the
//! client; a legacy SSE upstream going away.

use super::*;

/// An upstream that answers a POST with an SSE stream, sends one whole event,
/// then (after half an event when `partial`) resets the connection.
async fn resetting_upstream(partial: bool) -> (String, tokio::task::JoinHandle<()>) {
    raw_upstream(move |mut s| async move {
        let _ = s
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
            )
            .await;
        let event = b"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n";
        let _ = s
            .write_all(format!("{:x}\r\n", event.len()).as_bytes())
            .await;
        let _ = s.write_all(event).await;
        let _ = s.write_all(b"\r\n").await;
        if partial {
            let _ = s.write_all(b"10\r\ndata: {\"jsonrpc\"").await;
        }
        let _ = s.flush().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Linger 0 turns the close into a reset.
        let _ = s.set_zero_linger();
        drop(s);
    })
    .await
}

/// POSTs `INIT` to /bad/mcp and reads the SSE answer: its first event and
/// what came after it until the stream ended.
async fn read_broken_stream(g: &TestGateway) -> (support::clients::SseEvent, Vec<String>) {
    let started = Instant::now();
    let (status, _, mut reader) = open_sse(
        Method::POST,
        &g.url_for("/bad/mcp"),
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        INIT,
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let first = reader.next_event(BOUND).await.unwrap().unwrap();
    let mut rest = Vec::new();
    for _ in 0..4 {
        match reader.next_event(BOUND).await {
            Ok(Some(ev)) => rest.push(ev.data),
            Ok(None) => break,
            Err(e) => {
                rest.push(format!("(stream error: {e})"));
                break;
            }
        }
    }
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    (first, rest)
}

#[tokio::test]
async fn http_upstream_resetting_mid_sse_fails_that_request_with_an_error_event() {
    let (url, _task) = resetting_upstream(false).await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (first, rest) = read_broken_stream(&g).await;
    assert_eq!(first.id.as_deref(), Some("1"), "the complete event passes");
    assert_eq!(rest.len(), 1, "{rest:?}");
    let v = body_json(rest[0].as_bytes());
    assert_eq!(v["id"], 1, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("upstream 'bad' stream failed"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_resetting_mid_event_cuts_the_stream() {
    let (url, _task) = resetting_upstream(true).await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (first, rest) = read_broken_stream(&g).await;
    assert_eq!(first.id.as_deref(), Some("1"), "the complete event passes");
    // Half an event cannot be taken back: the stream is cut, never completed
    // with the half event.
    assert!(
        rest.iter().all(|r| r.starts_with("(stream error")),
        "{rest:?}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn sse_event_over_the_limit_fails_that_request() {
    // A `tools/list` answer the gateway rewrites (the demo's overlays apply to a
    // mount named "demo"), as one SSE event of 64 KB sent in small pieces,
    // against a 1 KB limit: the gateway stops buffering it at the limit.
    let (url, _task) = raw_upstream(|mut s| async move {
        let big = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[],\"pad\":\"{}\"}}}}\n\n",
            "x".repeat(64 * 1024)
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if s.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for piece in big.as_bytes().chunks(256) {
            let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
            chunk.extend_from_slice(piece);
            chunk.extend_from_slice(b"\r\n");
            if s.write_all(&chunk).await.is_err() {
                return;
            }
            let _ = s.flush().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let _ = s.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let mut config = gw::test_config();
    config.limits.max_message_bytes = 1024;
    config.overlays = concat!(env!("CARGO_MANIFEST_DIR"), "/overlays").into();
    config.upstreams = vec![gw::http("demo", &url), {
        let mut good = gw::demo_stdio("good");
        good.path = Some("/good/mcp".into());
        good
    }];
    let g = TestGateway::start_with(config).await;
    let (status, _, body) = post_json(
        &g.url_for("/demo/mcp"),
        &[],
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = support::clients::parse_sse(&body);
    let last = events.last().expect("an event");
    let v = body_json(last.data.as_bytes());
    assert_eq!(v["id"], 2, "{v}");
    let message = v["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        message.contains("upstream 'demo'") && message.contains("exceeded 1024 bytes"),
        "{message}"
    );
    assert!(!String::from_utf8_lossy(&body).contains("xxxx"));
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn get_stream_resumption_is_the_clients_with_last_event_id_forwarded() {
    // The gateway does not replay or retry a GET stream itself (it keeps no
    // events); a client reconnecting with Last-Event-ID reaches the upstream
    // with it, and the upstream's event ids come back unchanged.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut got = 0;
                while !String::from_utf8_lossy(&buf[..got]).contains("\r\n\r\n") {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]).to_ascii_lowercase();
                let last = head
                    .lines()
                    .find_map(|l| l.strip_prefix("last-event-id:"))
                    .map(|v| v.trim().to_owned())
                    .unwrap_or_else(|| "none".into());
                let event = format!(
                    "id: after-{last}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"{last}\"}}}}\n\n"
                );
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{event}",
                    event.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, _, body) = request_raw(
        Method::GET,
        &g.url_for("/bad/mcp"),
        &[("accept", "text/event-stream"), ("last-event-id", "ev-41")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = support::clients::parse_sse(&body);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].id.as_deref(), Some("after-ev-41"));
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn legacy_sse_upstream_going_away_ends_its_sessions_only() {
    let upstream = support::upstreams::start_sse().await.unwrap();
    let g = gateway_with(gw::sse("bad", &upstream.url)).await;
    let url = g.url_for("/bad/mcp");
    let (status, headers, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    upstream.shutdown().await;
    // The session ends: its next request is refused clearly, never hangs.
    let started = Instant::now();
    let (status, _, body) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await;
    assert!(started.elapsed() < BOUND);
    let text = String::from_utf8_lossy(&body);
    assert!(
        status == StatusCode::NOT_FOUND
            || (status == StatusCode::OK && text.contains("upstream 'bad'")),
        "{status} {text}"
    );
    // A new session is refused with the upstream named.
    let (_, message) = bad_init(&g).await;
    assert!(message.contains("upstream 'bad'"), "{message}");
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_hanging_mid_sse_answer_times_out_with_an_error_event() {
    let (url, _task) = raw_upstream(|mut s| async move {
        let event = "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
        let _ = s.write_all(chunk.as_bytes()).await;
        // Then nothing, with the connection open.
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(s);
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (first, rest) = read_broken_stream(&g).await;
    assert_eq!(first.id.as_deref(), Some("1"));
    assert_eq!(rest.len(), 1, "{rest:?}");
    let v = body_json(rest[0].as_bytes());
    assert_eq!(v["id"], 1, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("upstream 'bad'") && message.contains("no answer within 2 s"),
        "{message}"
    );
    assert_good_serves(&g).await;
}
