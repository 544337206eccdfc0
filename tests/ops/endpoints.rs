//! What the operational endpoints say: `/readyz` names an unreachable
//! upstream, and a path nothing serves is answered with the paths served.

use super::*;

#[tokio::test]
async fn readyz_names_an_unreachable_upstream() {
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let gateway = TestGateway::start(vec![gw::http(
        "gone",
        &format!("http://127.0.0.1:{port}/mcp"),
    )])
    .await;
    let (status, headers, body) =
        request_raw(Method::GET, &gateway.url_for("/readyz"), &[], "").await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.starts_with("not ready\n"), "{body}");
    assert!(body.contains("upstream 'gone': not ready"), "{body}");
    assert!(headers.contains_key("x-request-id"));

    // A request to it fails upstream: counted as such.
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let (status, _, body) = post_json(&gateway.url(), &[], init).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body_json(&body)["error"].is_object());
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_up", &[("upstream", "gone")]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[
                ("upstream", "gone"),
                ("method", "initialize"),
                ("outcome", "upstream_error")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    gateway.shutdown().await;
}

/// A request to a path nothing serves is answered 404 with the paths that
/// are served: each mount's and each app's MCP endpoint (with its members),
/// and the operational ones. (Before: "this gateway serves MCP at its mount
/// paths", naming none.)
#[tokio::test]
async fn a_path_nothing_serves_is_answered_with_the_paths_served() {
    use mcp_ui_model::config::{AppConfig, Config, MemberConfig};
    let gateway = TestGateway::start_with(Config {
        upstreams: vec![
            gw::stdio("time", STDIO_COMMAND, &[]),
            gw::stdio("memory", STDIO_COMMAND, &[]),
        ],
        apps: vec![AppConfig {
            name: "suite".into(),
            path: None,
            upstreams: vec![
                MemberConfig::Name("time".into()),
                MemberConfig::Table {
                    upstream: "memory".into(),
                    prefix: Some("m_".into()),
                },
            ],
            auth: None,
        }],
        ..gw::test_config()
    })
    .await;
    let (status, headers, body) = request_raw(Method::GET, &gateway.url_for("/mpc"), &[], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    let text = String::from_utf8_lossy(&body);
    for line in [
        "not found: nothing is served at this path. This gateway serves:",
        "  /time/mcp  MCP, upstream 'time'",
        "  /memory/mcp  MCP, upstream 'memory'",
        "  /suite/mcp  MCP, app 'suite' of time, memory",
        "  /healthz, /readyz, /metrics  health, readiness and metrics",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
}
