//! Upstream faults and limits: each fault gives the affected request a clear
//! error within a bounded time, and a healthy mount of the same gateway keeps
//! serving throughout. Faulty HTTP upstreams are tiny raw TCP servers on
//! 127.0.0.1; faulty stdio upstreams are `sh -c` one-liners.

mod budget;
mod http_upstreams;
mod limits;
mod overlays;
mod sse;
mod stdio;

use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use support::clients::{body_json, error_message, open_sse, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::process::copy_dir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"faults-test","version":"1"}}}"#;
const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}"#;
/// Every affected request must be answered within this.
const BOUND: Duration = Duration::from_secs(15);

/// A gateway with the faulty upstream at /bad/mcp and the demo (stdio) at
/// /good/mcp, short timeouts.
async fn gateway_with(bad: mcp_ui_model::config::UpstreamConfig) -> TestGateway {
    gateway_tuned(bad, |_| {}).await
}

async fn gateway_tuned(
    bad: mcp_ui_model::config::UpstreamConfig,
    tune: impl FnOnce(&mut mcp_ui_model::config::Config),
) -> TestGateway {
    let mut config = gw::test_config();
    config.limits.request_timeout_secs = 2;
    config.limits.connect_timeout_secs = 2;
    config.upstreams = vec![bad, gw::demo_stdio("good")];
    tune(&mut config);
    TestGateway::start_with(config).await
}

/// The healthy mount answers a fresh session's initialize.
async fn assert_good_serves(g: &TestGateway) {
    let (status, headers, body) = post_json(&g.url_for("/good/mcp"), &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(headers.contains_key("mcp-session-id"));
    assert_eq!(
        body_json(&body)["result"]["serverInfo"]["name"],
        "task-list-demo"
    );
}

/// POST `INIT` to the faulty mount: the error message, checked to come in time.
async fn bad_init(g: &TestGateway) -> (StatusCode, String) {
    let started = Instant::now();
    let (status, _, body) = post_json(&g.url_for("/bad/mcp"), &[], INIT).await;
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    (status, error_message(&body))
}

// === faulty HTTP upstreams ===

/// Reads one request head (and a Content-Length body) from `s`; what was read.
async fn read_request(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = s.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// A raw upstream on 127.0.0.1 that answers every request with `act`.
async fn raw_upstream<F, Fut>(act: F) -> (String, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    raw_upstream_reading(move |s, _| act(s)).await
}

/// [`raw_upstream`], `act` also given the request as read.
async fn raw_upstream_reading<F, Fut>(act: F) -> (String, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let act = std::sync::Arc::new(act);
        while let Ok((mut s, _)) = listener.accept().await {
            let act = act.clone();
            tokio::spawn(async move {
                let request = read_request(&mut s).await;
                act(s, request).await;
            });
        }
    });
    (url, task)
}
