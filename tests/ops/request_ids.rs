//! `x-request-id`: echoed when sane, generated otherwise, on every response,
//! and carried by the binary's log lines of the request (JSON and text).

use super::*;

#[tokio::test]
async fn request_ids_are_echoed_or_generated_on_every_response() {
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let gateway = TestGateway::start(vec![gw::http(
        "gone",
        &format!("http://127.0.0.1:{port}/mcp"),
    )])
    .await;
    let health = gateway.url_for("/healthz");
    let is_generated = |v: &hyper::header::HeaderValue| {
        v.len() == 16 && v.as_bytes().iter().all(u8::is_ascii_hexdigit)
    };

    let (_, h, _) = request_raw(Method::GET, &health, &[("x-request-id", "Abc.123_x")], "").await;
    assert_eq!(h["x-request-id"], "Abc.123_x");
    let (_, h, _) = request_raw(Method::GET, &health, &[], "").await;
    assert!(is_generated(&h["x-request-id"]), "{:?}", h["x-request-id"]);
    let (_, h2, _) = request_raw(Method::GET, &health, &[], "").await;
    assert_ne!(h["x-request-id"], h2["x-request-id"], "ids differ");
    // Not sane: replaced.
    let long = "x".repeat(129);
    for bad in ["has space", long.as_str()] {
        let (_, h, _) = request_raw(Method::GET, &health, &[("x-request-id", bad)], "").await;
        assert!(is_generated(&h["x-request-id"]), "{bad:?} kept");
    }
    let longest = "y".repeat(128);
    let (_, h, _) = request_raw(Method::GET, &health, &[("x-request-id", &longest)], "").await;
    assert_eq!(h["x-request-id"], longest.as_str());

    // Errors carry it: an unknown path, a bad media type, a forbidden Host,
    // a failed upstream.
    let (status, h, _) = request_raw(
        Method::GET,
        &gateway.url_for("/nowhere"),
        &[("x-request-id", "e1")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(h["x-request-id"], "e1");
    let (status, h, _) = request_raw(
        Method::POST,
        &gateway.url(),
        &[("x-request-id", "e2"), ("content-type", "text/plain")],
        "{}",
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(h["x-request-id"], "e2");
    let (status, h, _) = request_raw(
        Method::GET,
        &health,
        &[("x-request-id", "e3"), ("host", "evil.example")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(h["x-request-id"], "e3");
    let (status, h, _) = post_json(
        &gateway.url(),
        &[("x-request-id", "e4")],
        request(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h["x-request-id"], "e4");

    // Browsers may read it.
    let (_, h, _) = request_raw(
        Method::GET,
        &health,
        &[("origin", "http://localhost:5173")],
        "",
    )
    .await;
    let expose = h["access-control-expose-headers"].to_str().unwrap();
    assert!(expose.contains("x-request-id"), "{expose}");
    gateway.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// Log lines of a request carry its id (the gateway binary)

/// Runs the gateway binary with `log_format` in front of a closed port, sends one
/// request that fails upstream (which logs a warning) with the given request id,
/// stops the gateway and returns its stderr.
async fn stderr_of_failed_request(log_format: &str, request_id: &str) -> String {
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["--log-format", log_format, "serve", "--config", "/dev/null"])
        .args(["--listen", "127.0.0.1:0", "--name", "gone"])
        .arg("--upstream")
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg("--overlays")
        .arg(dir.path().join("none"))
        .current_dir(dir.path())
        .env("RUST_LOG", "info");
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let url = gateway
        .look_for_async(START_LIMIT, |stream, line| {
            endpoint_url(line).filter(|_| stream == Stream::Stdout)
        })
        .await
        .unwrap_or_else(|_| panic!("no endpoint line; stderr:\n{}", gateway.stderr()));

    let (status, headers, body) = post_json(
        &url,
        &[("x-request-id", request_id)],
        request(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["x-request-id"], request_id);
    assert!(body_json(&body)["error"].is_object());

    gateway.kill_tree();
    let (_, _, stderr) = gateway.finish(SETTLE_LIMIT).expect("killed");
    stderr
}

#[tokio::test]
async fn json_log_lines_carry_the_request_id() {
    let stderr = stderr_of_failed_request("json", "log-json-7").await;
    let lines: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(!lines.is_empty(), "no JSON log lines:\n{stderr}");
    let ours: Vec<&Value> = lines
        .iter()
        .filter(|l| l["span"]["request_id"] == "log-json-7")
        .collect();
    assert!(
        ours.iter()
            .any(|l| l["fields"]["message"] == "upstream request failed"),
        "the request's warning lacks its request_id:\n{stderr}"
    );
    // Every line logged inside the request carries it.
    for line in lines.iter().filter(|l| l["spans"].is_array()) {
        let in_request = line["spans"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "request");
        if in_request {
            assert!(line["span"]["request_id"].is_string(), "{line}");
        }
    }
}

#[tokio::test]
async fn text_log_lines_carry_the_request_id() {
    let stderr = stderr_of_failed_request("text", "log-text-7").await;
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("upstream request failed") && l.contains("request_id=log-text-7")),
        "the request's warning lacks its request_id:\n{stderr}"
    );
}
