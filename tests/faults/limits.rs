//! The limits a client meets: stdio children capped, requests in flight per
//! session capped, invalid limits named by field.

use super::*;

#[tokio::test]
async fn stdio_children_are_capped() {
    // Sessions that each own their child.
    let mut config = gw::test_config();
    config.limits.max_stdio_children = 1;
    config.upstreams = vec![gw::per_client(gw::demo_stdio("demo"))];
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let (status, headers, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, body) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let message = error_message(&body);
    assert!(
        message.contains("limits.max_stdio_children") && message.contains("upstream 'demo'"),
        "{message}"
    );
    // The first session is unaffected; once it ends, its place is free again.
    let (status, _, _) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = request_raw(Method::DELETE, &url, &[("mcp-session-id", &sid)], "").await;
    assert_eq!(status, StatusCode::OK);
    let freed = support::clients::wait_until(BOUND, || {
        (g.gateway.upstreams.children.running() == 0).then_some(())
    })
    .await;
    assert!(freed.is_some(), "the child was not reaped");
    let (status, _, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn requests_in_flight_per_session_are_capped() {
    let mut config = gw::test_config();
    config.limits.max_in_flight_per_session = 1;
    config.upstreams = vec![gw::stdio(
        "fixture",
        env!("CARGO_BIN_EXE_mcp-fixture-server"),
        &[],
    )];
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let (status, headers, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, _) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let slow = {
        let url = url.clone();
        let sid = sid.clone();
        tokio::spawn(async move {
            post_json(
                &url,
                &[("mcp-session-id", &sid)],
                r#"{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{"ms":6000}}}"#,
            )
            .await
        })
    };
    let busy = support::clients::wait_until(BOUND, || {
        (g.gateway.pending.in_flight.count(sid.as_bytes()) == 1).then_some(())
    })
    .await;
    assert!(busy.is_some(), "the slow call never started");
    let (status, headers, body) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":"second","method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "1");
    let v = body_json(&body);
    assert_eq!(v["id"], "second");
    assert!(
        error_message(&body).contains("limits.max_in_flight_per_session"),
        "{v}"
    );
    // Another session is not affected.
    let (status, _, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = slow.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains("slept 6000 ms"));
    let (status, _, _) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":"third","method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn invalid_limits_name_their_field() {
    let mut config = gw::test_config();
    config.limits.max_in_flight_per_session = 0;
    config.limits.max_stdio_children = 0;
    config.upstreams = vec![gw::demo_stdio("demo")];
    let e = config.resolve().unwrap_err().to_string();
    assert!(
        e.contains("limits.max_in_flight_per_session: must be greater than 0"),
        "{e}"
    );
    assert!(
        e.contains("limits.max_stdio_children: must be greater than 0"),
        "{e}"
    );
}
