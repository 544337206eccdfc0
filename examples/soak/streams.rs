//! GET streams: short ones opened and dropped as a call of the load, and
//! long-lived ones held on some sessions, counting the
//! `notifications/tools/list_changed` each reload announces.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::bail;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Method, Request, StatusCode};
use mcp_ui_wire::sse;

use crate::mcp::{HttpClient, Session, send};
use crate::stats::{Stats, kind_of};

/// How long a short GET stream is read before the client drops it.
const SHORT_STREAM: Duration = Duration::from_millis(500);

fn get_stream(session: &Session) -> Request<Full<Bytes>> {
    Request::builder()
        .method(Method::GET)
        .uri(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", &session.version)
        .body(Full::new(Bytes::new()))
        .expect("a valid request")
}

/// Opens a GET stream, reads what arrives for a moment, and drops it.
pub async fn short_stream(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let response = send(client, get_stream(session)).await?;
    let status = response.status();
    if status != StatusCode::OK {
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        bail!("http {status}: {}", String::from_utf8_lossy(&body));
    }
    let mut body = response.into_body();
    let _ = tokio::time::timeout(SHORT_STREAM, body.frame()).await;
    Ok(())
}

/// Holds a GET stream open until `stop`, counting list-changed
/// announcements; reopens it if the gateway ends it.
pub async fn hold_stream(
    client: &HttpClient,
    session: &Session,
    stats: &Stats,
    stop: tokio_util::sync::CancellationToken,
) {
    while !stop.is_cancelled() {
        let response = tokio::select! {
            () = stop.cancelled() => return,
            r = send(client, get_stream(session)) => r,
        };
        let response = match response {
            Ok(r) if r.status() == StatusCode::OK => r,
            Ok(r) => {
                stats.error(
                    format!("stream:http_{}", r.status().as_u16()),
                    session.url.clone(),
                );
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
            Err(e) => {
                stats.error(kind_of("stream", &e), format!("{e:#}"));
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        let mut body = response.into_body();
        let mut parser = sse::Parser::new(1 << 20);
        loop {
            let frame = tokio::select! {
                () = stop.cancelled() => return,
                f = body.frame() => f,
            };
            let Some(Ok(frame)) = frame else { break };
            if let Ok(data) = frame.into_data() {
                parser.push(&data);
                while let Ok(Some(event)) = parser.next_event() {
                    if event.data.contains("notifications/tools/list_changed")
                        && stats.measuring.load(Ordering::Relaxed)
                    {
                        stats.list_changed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}
