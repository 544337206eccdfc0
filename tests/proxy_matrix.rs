//! Every upstream transport behind the gateway, every client era in front:
//! the same exercise as direct (tests/fixtures_selftest.rs), now through the
//! gateway's streamable HTTP endpoint.

use hyper::StatusCode;
use rmcp::model::ProtocolVersion;
use serde_json::Value;
use support::clients::{Era, connect_http, negotiated_version, parse_sse, post_json};
use support::exercise::{check_client, exercise_fixture};
use support::fixture::ProtocolMode;
use support::gateway::{self as gw, TestGateway};
use support::upstreams::{self, HttpFlavor, STDIO_COMMAND};

use crate::support;

fn eras() -> Vec<Era> {
    Era::matrix().into_iter().chain([Era::Auto]).collect()
}

async fn exercise_every_era(g: &TestGateway, transport: &str) -> anyhow::Result<()> {
    for era in eras() {
        let client = connect_http(&g.url(), &era).await?;
        check_client(
            client,
            &era,
            &format!("{transport} upstream, {era:?} client"),
        )
        .await?;
    }
    Ok(())
}

#[tokio::test]
async fn streamable_http_to_http_upstream() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatefulSse).await?;
    let g = TestGateway::start(vec![gw::http("fixture", &upstream.url)]).await;
    exercise_every_era(&g, "stateful HTTP").await
}

#[tokio::test]
async fn streamable_http_to_stateless_json_upstream() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatelessJson).await?;
    let g = TestGateway::start(vec![gw::http("fixture", &upstream.url)]).await;
    let client = connect_http(&g.url(), &Era::Modern).await?;
    check_client(
        client,
        &Era::Modern,
        "stateless JSON upstream, Modern client",
    )
    .await
}

#[tokio::test]
async fn streamable_http_to_legacy_sse_upstream() -> anyhow::Result<()> {
    let upstream = upstreams::start_sse().await?;
    let g = TestGateway::start(vec![gw::sse("fixture", &upstream.url)]).await;
    exercise_every_era(&g, "legacy SSE").await
}

#[tokio::test]
async fn streamable_http_to_stdio_upstream() -> anyhow::Result<()> {
    let g = TestGateway::start(vec![gw::stdio("fixture", STDIO_COMMAND, &[])]).await;
    exercise_every_era(&g, "stdio").await
}

/// A client offering 2026-07-28 to an upstream that only knows 2025-11-25
/// falls back to 2025-11-25 talking to it directly; through the gateway it
/// is served 2026-07-28 (the gateway stands in for the revision), and a
/// strict 2026 client, which fails directly, works too.
#[tokio::test]
async fn a_2025_upstream_is_served_as_2026() -> anyhow::Result<()> {
    let http = upstreams::start_http_with(HttpFlavor::StatefulSse, ProtocolMode::UpTo2025).await?;
    let sse = upstreams::start_sse_with(ProtocolMode::UpTo2025).await?;
    let g = TestGateway::start(vec![
        gw::http("http", &http.url),
        gw::sse("sse", &sse.url),
        gw::stdio("stdio", STDIO_COMMAND, &["--protocol", "2025"]),
    ])
    .await;
    let direct = connect_http(&http.url, &Era::Auto).await?;
    assert_eq!(
        negotiated_version(&direct),
        Some(ProtocolVersion::V_2025_11_25)
    );
    direct.cancel().await?;
    assert!(
        connect_http(&http.url, &Era::Modern).await.is_err(),
        "a strict 2026 client fails against the 2025 upstream directly"
    );
    for mount in ["http", "sse", "stdio"] {
        let url = g.url_for(&format!("/{mount}/mcp"));
        for era in [Era::Auto, Era::Modern] {
            let client = connect_http(&url, &era).await?;
            assert_eq!(
                negotiated_version(&client),
                Some(ProtocolVersion::V_2026_07_28),
                "{mount}, {era:?} client"
            );
            exercise_fixture(
                &client,
                &format!("{mount} 2025-only upstream, {era:?} client"),
            )
            .await?;
            client.cancel().await?;
        }
    }
    Ok(())
}

/// Several upstreams, each at its own path, in one gateway process.
#[tokio::test]
async fn several_upstreams_in_one_gateway() -> anyhow::Result<()> {
    let http = upstreams::start_http(HttpFlavor::StatefulSse).await?;
    let sse = upstreams::start_sse().await?;
    let g = TestGateway::start(vec![
        gw::http("a", &http.url),
        gw::sse("b", &sse.url),
        gw::stdio("c", STDIO_COMMAND, &[]),
        gw::demo_stdio("tasks"),
    ])
    .await;
    let era = Era::legacy();
    for mount in ["a", "b", "c"] {
        let client = connect_http(&g.url_for(&format!("/{mount}/mcp")), &era).await?;
        check_client(client, &era, &format!("mount {mount}")).await?;
    }
    let client = connect_http(&g.url_for("/tasks/mcp"), &era).await?;
    let tools = client.list_all_tools().await?;
    assert!(tools.iter().any(|t| t.name == "add_task"));
    // A session of one mount is not valid at another.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (_, headers, _) = post_json(&g.url_for("/c/mcp"), &[], init).await;
    let sid = headers["mcp-session-id"].to_str()?.to_owned();
    let (status, _, _) = post_json(
        &g.url_for("/tasks/mcp"),
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    Ok(())
}

/// 2025-03-26 batches: an array of requests and notifications gets every
/// response, on one SSE stream, from an upstream that never sees a batch.
#[tokio::test]
async fn batches_reach_a_stdio_upstream() -> anyhow::Result<()> {
    let g = TestGateway::start(vec![gw::stdio(
        "fixture",
        STDIO_COMMAND,
        &["--protocol", "2025"],
    )])
    .await;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batch","version":"1"}}}"#;
    let (status, headers, body) = post_json(&g.url(), &[], init).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str()?.to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-03-26"),
    ];
    let batch = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}},
        {"jsonrpc":"2.0","id":7,"method":"ping"}]"#;
    let (status, headers, body) = post_json(&g.url(), &session, batch).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers["content-type"]
            .to_str()?
            .starts_with("text/event-stream")
    );
    let mut ids: Vec<Value> = parse_sse(&body)
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| e.json().unwrap())
        .filter(|m| m.get("result").is_some())
        .map(|m| m["id"].clone())
        .collect();
    ids.sort_by_key(|v| v.to_string());
    assert_eq!(ids, [Value::from("a"), Value::from(7)]);
    // A batch of notifications only is accepted with 202.
    let (status, _, _) = post_json(
        &g.url(),
        &session,
        r#"[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    Ok(())
}
