//! Streams and their edges: SSE event ids from an HTTP upstream reach the
//! client unchanged, the GET stream relays server messages, and a cancelled
//! request stops waiting at once.

use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use support::clients::{open_sse, parse_sse, post_json};
use support::gateway::{self as gw, TestGateway};
use support::upstreams::{self, HttpFlavor, STDIO_COMMAND};

use crate::support;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"streams","version":"1"}}}"#;
const WAIT: Duration = Duration::from_secs(10);

/// Initialize a 2025-era session at `url`; the headers to send afterwards.
async fn session(url: &str) -> Vec<(String, String)> {
    let (status, headers, body) = post_json(url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let h = vec![
        ("mcp-session-id".to_owned(), sid),
        ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()),
    ];
    let (status, _, _) = post_json(
        url,
        &refs(&h),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    h
}

fn refs(h: &[(String, String)]) -> Vec<(&str, &str)> {
    h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect()
}

#[tokio::test]
async fn sse_event_ids_from_an_http_upstream_pass_unchanged() -> anyhow::Result<()> {
    let upstream = upstreams::start_http(HttpFlavor::StatefulSse).await?;
    let g = TestGateway::start(vec![gw::http("fixture", &upstream.url)]).await;
    let mut shapes = Vec::new();
    for url in [upstream.url.clone(), g.url()] {
        let h = session(&url).await;
        let (status, headers, body) = post_json(
            &url,
            &refs(&h),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            headers["content-type"]
                .to_str()?
                .starts_with("text/event-stream")
        );
        let events = parse_sse(&body);
        assert!(
            events.iter().all(|e| e.id.is_some()),
            "{url}: every event keeps its id: {events:?}"
        );
        shapes.push(
            events
                .iter()
                .map(|e| (e.event.clone(), e.data.is_empty()))
                .collect::<Vec<_>>(),
        );

        // The GET stream opens through the gateway and starts as the upstream's does.
        let mut get = refs(&h);
        get.push(("accept", "text/event-stream"));
        let (status, headers, mut reader) = open_sse(Method::GET, &url, &get, "").await?;
        assert_eq!(status, StatusCode::OK, "{url}: GET stream");
        assert!(
            headers["content-type"]
                .to_str()?
                .starts_with("text/event-stream")
        );
        let first = reader.next_event(WAIT).await?.expect("a first event");
        assert!(first.id.is_some(), "{url}: priming event keeps its id");
    }
    assert_eq!(
        shapes[0], shapes[1],
        "same events direct and through the gateway"
    );
    Ok(())
}

#[tokio::test]
async fn server_messages_reach_the_get_stream_of_a_stdio_session() -> anyhow::Result<()> {
    let g = TestGateway::start(vec![gw::stdio("fixture", STDIO_COMMAND, &[])]).await;
    let url = g.url();
    let h = session(&url).await;
    let mut get = refs(&h);
    get.push(("accept", "text/event-stream"));
    let (status, _, mut reader) = open_sse(Method::GET, &url, &get, "").await?;
    assert_eq!(status, StatusCode::OK);
    // A second GET stream on the same session is refused.
    let (status, _, _) = open_sse(Method::GET, &url, &get, "").await?;
    assert_eq!(status, StatusCode::CONFLICT);
    // `log` sends a logging notification while its call is in flight; once
    // the call is answered, later server messages go to the GET stream.
    let (status, _, _) = post_json(
        &url,
        &refs(&h),
        r#"{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = post_json(&url, &refs(&h), r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"log","arguments":{"message":"on the call stream"}}}"#).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains("on the call stream") && text.contains("\"id\":4"),
        "{text}"
    );
    // Ending the session ends its GET stream.
    let (status, _, _) = support::clients::request_raw(Method::DELETE, &url, &refs(&h), "").await;
    assert_eq!(status, StatusCode::OK);
    let started = Instant::now();
    while reader.next_event(WAIT).await?.is_some() {
        assert!(
            started.elapsed() < WAIT,
            "GET stream must end with its session"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_cancelled_request_stops_waiting() -> anyhow::Result<()> {
    let g = TestGateway::start(vec![gw::stdio("fixture", STDIO_COMMAND, &[])]).await;
    let url = g.url();
    let h = session(&url).await;
    let call = {
        let (url, h) = (url.clone(), h.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let r = post_json(&url, &refs(&h), r#"{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"slow","arguments":{"ms":15000}}}"#).await;
            (r, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, _) = post_json(&url, &refs(&h), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"user"}}"#).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let ((status, _, body), elapsed) = tokio::time::timeout(WAIT, call).await??;
    assert_eq!(status, StatusCode::OK);
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    let v: serde_json::Value = serde_json::from_slice(&body)?;
    assert_eq!(v["id"], "long");
    assert_eq!(v["error"]["code"], -32800);
    // The session goes on.
    let (status, _, body) = post_json(
        &url,
        &refs(&h),
        r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    Ok(())
}

#[tokio::test]
async fn unrelated_server_messages_wait_for_the_get_stream() -> anyhow::Result<()> {
    // Says something on its own after initialization, with no request in flight.
    let script = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"chatty","version":"0"}}}'; read l; echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'; sleep 20"#;
    let g = TestGateway::start(vec![gw::stdio("chatty", "sh", &["-c", script])]).await;
    let url = g.url();
    let h = session(&url).await;
    let mut get = refs(&h);
    get.push(("accept", "text/event-stream"));
    let (status, _, mut reader) = open_sse(Method::GET, &url, &get, "").await?;
    assert_eq!(status, StatusCode::OK);
    let event = reader
        .next_event(WAIT)
        .await?
        .expect("the queued notification");
    assert_eq!(event.json()?["method"], "notifications/tools/list_changed");
    Ok(())
}
