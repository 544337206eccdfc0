//! Proves the test harness without the gateway: every client era talks directly to
//! every fixture upstream (streamable HTTP, legacy HTTP+SSE, stdio) and to the bundled
//! demo server, and the raw HTTP/SSE helpers see what the gateway tests will assert on.

#![allow(deprecated)] // rmcp marks logging (asserted on here) deprecated by SEP-2577

use std::time::Duration;

use hyper::{Method, StatusCode};
use mcp_ui_gateway::demo;
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};
use support::{
    clients::{
        self, Era, call, call_text, connect_http, connect_stdio, negotiated_version,
        open_legacy_sse, parse_sse, post_json, request_raw,
    },
    exercise::{EVENT_WAIT, NOTIFY_WAIT, check_client, exercise_fixture},
    fixture::{FIXTURE_NAME, ProtocolMode},
    upstreams::{self, HttpFlavor},
};

use crate::support;

#[tokio::test]
async fn http_stateful_sse_upstream_serves_every_era() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatefulSse).await?;
    for era in Era::matrix().into_iter().chain([Era::Auto]) {
        let client = connect_http(&upstream.url, &era).await?;
        check_client(client, &era, &format!("stateful HTTP {era:?}")).await?;
    }
    upstream.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn http_stateless_json_upstream_serves_modern_clients_fully() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatelessJson).await?;
    let client = connect_http(&upstream.url, &Era::Modern).await?;
    check_client(client, &Era::Modern, "stateless HTTP Modern").await?;
    upstream.shutdown().await;
    Ok(())
}

/// Without sessions a pre-2026 server has nowhere to receive the client's answer to a
/// server-to-client request, so only one-way tools work for 2025-era clients.
#[tokio::test]
async fn http_stateless_json_upstream_serves_legacy_clients_one_way() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatelessJson).await?;
    let client = connect_http(&upstream.url, &Era::legacy()).await?;
    assert_eq!(
        negotiated_version(&client),
        Some(ProtocolVersion::V_2025_11_25)
    );
    assert_eq!(
        call_text(&client, "echo", json!({ "text": "x" })).await?,
        "x"
    );
    assert_eq!(
        call_text(&client, "progress", json!({ "steps": 2 })).await?,
        "completed 2 steps"
    );
    let recorder = client.service().recorder.clone();
    assert_eq!(recorder.wait_for_progress(2, NOTIFY_WAIT).await.len(), 2);
    // rmcp answers the client's POSTed sampling result with 400 and the call never
    // completes, so only wait briefly.
    let sampled = tokio::time::timeout(
        Duration::from_secs(2),
        call(&client, "sample", json!({ "prompt": "p" })),
    )
    .await;
    assert!(
        !matches!(sampled, Ok(Ok(_))),
        "sampling cannot work without a session: {sampled:?}"
    );
    client.cancel().await?;
    upstream.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn stdio_upstream_serves_every_era() -> anyhow::Result<()> {
    for era in Era::matrix().into_iter().chain([Era::Auto]) {
        let command = upstreams::stdio_command(ProtocolMode::All);
        let client = connect_stdio(command, &era).await?;
        check_client(client, &era, &format!("stdio {era:?}")).await?;
    }
    Ok(())
}

/// rmcp's `Auto` lifecycle against a server that predates 2026-07-28: `server/discover`
/// is rejected with -32601, so the client falls back to `initialize` at 2025-11-25.
#[tokio::test]
async fn auto_era_falls_back_against_a_2025_only_server() -> anyhow::Result<()> {
    let upstream =
        upstreams::start_http_with(HttpFlavor::StatefulSse, ProtocolMode::UpTo2025).await?;
    let legacy = ProtocolVersion::V_2025_11_25;

    let client = connect_http(&upstream.url, &Era::Auto).await?;
    assert_eq!(negotiated_version(&client), Some(legacy.clone()));
    exercise_fixture(&client, "HTTP 2025-only Auto").await?;
    client.cancel().await?;
    assert!(
        connect_http(&upstream.url, &Era::Modern).await.is_err(),
        "Modern must not silently fall back"
    );

    let client =
        connect_stdio(upstreams::stdio_command(ProtocolMode::UpTo2025), &Era::Auto).await?;
    assert_eq!(negotiated_version(&client), Some(legacy.clone()));
    exercise_fixture(&client, "stdio 2025-only Auto").await?;
    client.cancel().await?;

    // A pinned 2025-06-18 client is echoed, and plain `initialize` naming 2026-07-28 is
    // answered with the newest revision the server has.
    let client = connect_http(
        &upstream.url,
        &Era::Initialize(ProtocolVersion::V_2025_06_18),
    )
    .await?;
    assert_eq!(
        negotiated_version(&client),
        Some(ProtocolVersion::V_2025_06_18)
    );
    client.cancel().await?;
    let client = connect_http(
        &upstream.url,
        &Era::Initialize(ProtocolVersion::V_2026_07_28),
    )
    .await?;
    assert_eq!(negotiated_version(&client), Some(legacy));
    client.cancel().await?;

    upstream.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn legacy_sse_upstream_round_trips_raw_messages() -> anyhow::Result<()> {
    let upstream = upstreams::start_sse().await?;
    let mut session = open_legacy_sse(&upstream.url).await?;
    assert!(
        session.endpoint.starts_with("/messages?sessionId="),
        "endpoint event data: {}",
        session.endpoint
    );
    assert_eq!(
        session.post_url,
        format!("{}{}", upstream.base_url(), session.endpoint)
    );

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": { "sampling": {} },
            "clientInfo": { "name": "raw-sse", "version": "0" }
        }
    });
    let reply = session.request(&initialize).await?;
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(reply["result"]["serverInfo"]["name"], FIXTURE_NAME);
    assert_eq!(
        session
            .post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await,
        StatusCode::ACCEPTED
    );

    let echo = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "over sse" } }
    });
    let reply = session.request(&echo).await?;
    assert_eq!(reply["result"]["content"][0]["text"], "over sse");

    // Server-to-client request over the same stream, answered with a POST.
    let sample = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "sample", "arguments": { "prompt": "p" } }
    });
    assert_eq!(session.post(&sample).await, StatusCode::ACCEPTED);
    let request = session
        .events
        .next_named("message", EVENT_WAIT)
        .await?
        .json()?;
    assert_eq!(request["method"], "sampling/createMessage");
    let answer = json!({
        "jsonrpc": "2.0", "id": request["id"],
        "result": {
            "role": "assistant", "model": "raw",
            "content": { "type": "text", "text": "raw answer" }
        }
    });
    assert_eq!(session.post(&answer).await, StatusCode::ACCEPTED);
    let reply = session
        .events
        .next_named("message", EVENT_WAIT)
        .await?
        .json()?;
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"]["content"][0]["text"], "raw answer");

    let (status, _, _) = post_json(
        &format!("{}/messages?sessionId=unknown", upstream.base_url()),
        &[],
        echo.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    upstream.shutdown().await;
    Ok(())
}

/// Documents, byte by byte, what rmcp's streamable HTTP server does; the gateway tests
/// compare against the same helpers.
#[tokio::test]
async fn raw_http_helpers_see_rmcp_wire_behaviour() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatefulSse).await?;
    let url = upstream.url.as_str();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "raw", "version": "0" }
        }
    })
    .to_string();

    let (status, headers, body) = post_json(url, &[], initialize.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let session = headers["mcp-session-id"].to_str()?.to_owned();
    let events = parse_sse(&body);
    // A priming event (id, retry, empty data) precedes the response.
    assert_eq!(events[0].data, "");
    assert!(events[0].id.is_some());
    let reply = events.last().expect("an event").json()?;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");

    let session_headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, _) = post_json(
        url,
        &session_headers,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (status, _, body) = post_json(
        url,
        &session_headers,
        json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "echo", "arguments": { "text": "raw" } }
        })
        .to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let reply = parse_sse(&body).last().expect("an event").json()?;
    assert_eq!(reply["result"]["content"][0]["text"], "raw");
    assert!(
        reply["result"].get("resultType").is_none(),
        "no 2026 fields for 2025 peers"
    );

    // Missing Accept entries and unknown sessions.
    let (status, _, _) =
        post_json(url, &[("accept", "application/json")], initialize.clone()).await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    let (status, _, _) = post_json(
        url,
        &[("mcp-session-id", "nope")],
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The standalone GET stream opens; DELETE ends the session (202, not 200).
    let (status, headers, mut stream) = clients::open_sse(
        Method::GET,
        url,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", session.as_str()),
        ],
        bytes::Bytes::new(),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let priming = stream.next_event(EVENT_WAIT).await?.expect("priming event");
    assert_eq!(priming.data, "");
    drop(stream);
    let (status, _, _) = request_raw(
        Method::DELETE,
        url,
        &[("mcp-session-id", session.as_str())],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    // A 2026-07-28 request is answered without any session.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let (status, headers, body) = post_json(
        url,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ],
        json!({
            "jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": { "name": "echo", "arguments": { "text": "modern" }, "_meta": meta }
        })
        .to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.get("mcp-session-id").is_none());
    let reply = parse_sse(&body).last().expect("an event").json()?;
    assert_eq!(reply["result"]["content"][0]["text"], "modern");
    assert_eq!(reply["result"]["resultType"], "complete");

    // Without sessions there is no GET stream and no DELETE.
    let stateless = upstreams::start_http(HttpFlavor::StatelessJson).await?;
    let (status, _, _) = request_raw(
        Method::GET,
        &stateless.url,
        &[("accept", "text/event-stream")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, _, _) = request_raw(Method::DELETE, &stateless.url, &[], "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, headers, body) = post_json(&stateless.url, &[], initialize).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers.get("mcp-session-id").is_none());
    let reply: Value = serde_json::from_slice(&body)?;
    assert_eq!(reply["result"]["serverInfo"]["name"], FIXTURE_NAME);

    stateless.shutdown().await;
    upstream.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn demo_serves_a_shared_task_list_over_http() -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}{}", listener.local_addr()?, demo::HTTP_PATH);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(demo::serve_http(listener, shutdown.clone()));

    let modern = connect_http(&url, &Era::Modern).await?;
    let legacy = connect_http(&url, &Era::legacy()).await?;
    assert_eq!(
        negotiated_version(&legacy),
        Some(ProtocolVersion::V_2025_11_25)
    );
    let info = legacy.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some(demo::SERVER_NAME)
    );

    let tools = modern.list_all_tools().await?;
    assert!(
        tools
            .iter()
            .all(|t| t.output_schema.is_none() && t.meta.is_none())
    );

    let listed: Value = serde_json::from_str(&call_text(&modern, "list_tasks", json!({})).await?)?;
    let seeded = listed["tasks"].as_array().expect("tasks").len();
    assert!((2..=3).contains(&seeded));

    let added = call(&legacy, "add_task", json!({ "title": "Through a session" })).await?;
    assert!(added.structured_content.is_none());
    let task: Value = serde_json::from_str(clients::first_text(&added).expect("text"))?;
    assert_eq!(task["title"], "Through a session");
    assert_eq!(task["done"], false);

    let done: Value = serde_json::from_str(
        &call_text(&modern, "complete_task", json!({ "id": task["id"] })).await?,
    )?;
    assert_eq!(done["done"], true);
    let listed: Value = serde_json::from_str(&call_text(&legacy, "list_tasks", json!({})).await?)?;
    assert_eq!(listed["tasks"].as_array().expect("tasks").len(), seeded + 1);

    let missing = call(&modern, "complete_task", json!({ "id": 424242 })).await?;
    assert_eq!(missing.is_error, Some(true));

    modern.cancel().await?;
    legacy.cancel().await?;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), server).await???;
    Ok(())
}
