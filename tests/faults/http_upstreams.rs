//! Faulty HTTP upstreams: refusing, hanging, answering garbage or the wrong
//! media type, and stalling after their answer's head.

use super::*;

#[tokio::test]
async fn http_upstream_refusing_connections() {
    // Nobody listens there (held to the end, so nobody can).
    let closed = support::process::ClosedPort::new();
    let port = closed.port();
    let g = gateway_with(gw::http("bad", &format!("http://127.0.0.1:{port}/mcp"))).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' is unreachable"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_hanging_times_out() {
    let (url, _task) = raw_upstream(|s| async move {
        // Holds the connection open and never answers.
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(s);
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' did not answer within 2 s"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_answering_garbage() {
    let (url, _task) = raw_upstream(|mut s| async move {
        let _ = s
            .write_all(b"SSH-2.0-OpenSSH_9.6 not http at all\r\n\r\n")
            .await;
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' sent an invalid reply: its answer is not HTTP"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_answering_the_wrong_content_type() {
    let (url, _task) = raw_upstream(|mut s| async move {
        let page = "<html><body>502 from some proxy</body></html>";
        let _ = s
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            )
            .await;
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' sent an invalid reply") && message.contains("text/html"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

// === HTTP upstreams that stall after their answer's head ===

/// An upstream that answers `initialize` normally; to anything else it sends
/// a JSON answer's head and then stalls for a minute: `ping` after a
/// `Content-Length` and no body, the rest after the first bytes of a chunked
/// body, trickling a byte every 100 ms when the request names `trickle` or
/// is a `resources/list`.
async fn stalling_upstream() -> (String, tokio::task::JoinHandle<()>) {
    raw_upstream_reading(|mut s, request| async move {
        let head = |framing: &str| {
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{framing}\r\n")
        };
        if request.contains("\"initialize\"") {
            let framing = format!(
                "connection: close\r\ncontent-length: {}\r\n",
                INIT_RESULT.len()
            );
            let _ = s
                .write_all(format!("{}{INIT_RESULT}", head(&framing)).as_bytes())
                .await;
            return;
        }
        let trickle = request.contains("trickle") || request.contains("resources/list");
        let start = if request.contains("\"ping\"") {
            head("content-length: 100\r\n")
        } else {
            let first = r#"{"jsonrpc":"2.0","id":2,"result":{"#;
            let framing = head("transfer-encoding: chunked\r\n");
            format!("{framing}{:x}\r\n{first}\r\n", first.len())
        };
        let _ = s.write_all(start.as_bytes()).await;
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if trickle && s.write_all(b"1\r\n \r\n").await.is_err() {
                return;
            }
        }
    })
    .await
}

/// POSTs `body` on a connection of its own and reads until the gateway
/// closes it: how long that took, and what came.
async fn post_until_closed(g: &TestGateway, path: &str, body: &str) -> (Duration, String) {
    let started = Instant::now();
    let mut s = TcpStream::connect(g.addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        g.addr,
        body.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(BOUND, s.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "still open after {BOUND:?}: {}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    (
        started.elapsed(),
        String::from_utf8_lossy(&got).into_owned(),
    )
}

#[tokio::test]
async fn http_upstream_stalling_after_the_head_times_out_every_kind_of_answer() {
    let (url, _task) = stalling_upstream().await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let bad = g.url_for("/bad/mcp");
    let (status, _, body) = post_json(&bad, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body_json(&body)["result"]["serverInfo"]["name"], "sh");
    // An answer the gateway reads whole (a tool result, looked into for
    // in-band challenges) and one it passes through (ping) with nothing of
    // its body come yet: a JSON-RPC error for the request at the deadline.
    let timed_error = |id: u64, body: String| {
        let bad = bad.clone();
        async move {
            let started = Instant::now();
            let (status, _, answer) = post_json(&bad, &[], body).await;
            (id, started.elapsed(), status, answer)
        }
    };
    let call = |id: u64, name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
        )
    };
    let list = r#"{"jsonrpc":"2.0","id":5,"method":"resources/list"}"#;
    let (stalled, trickled, ping, cut) = tokio::join!(
        timed_error(2, call(2, "stall")),
        timed_error(3, call(3, "trickle")),
        timed_error(4, r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#.into()),
        // A body passed through whose first bytes went out: cut at the
        // deadline, since they cannot be taken back.
        post_until_closed(&g, "/bad/mcp", list),
    );
    for (id, took, status, answer) in [stalled, trickled, ping] {
        assert_eq!(status, StatusCode::OK, "request {id}");
        let v = body_json(&answer);
        assert_eq!(v["id"], id, "{v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("upstream 'bad' did not answer within 2 s"),
            "request {id}: {message}"
        );
        assert!(
            took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
            "request {id} took {took:?}"
        );
    }
    let (took, got) = cut;
    assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    assert!(
        got.contains(r#"{"jsonrpc":"2.0","id":2,"result":{"#),
        "{got}"
    );
    assert!(
        !got.ends_with("0\r\n\r\n"),
        "the body was cut, not ended: {got}"
    );
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "the trickling answer was cut after {took:?}"
    );
    assert_good_serves(&g).await;
}
