//! A legacy HTTP+SSE upstream (protocol 2024-11-05): one GET stream per
//! session whose first `endpoint` event names where to POST; the server's
//! messages arrive as `message` events on the stream.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::client::{Client, UpstreamBody, send};
use super::messages::{MessageSession, Mux};
use mcp_ui_model::config::Limits;
use mcp_ui_model::outcome::{Failure, UpstreamError};
use mcp_ui_wire::jsonrpc::{self, Kind};
use mcp_ui_wire::sse::Parser;

/// Connect, wait for the `endpoint` event, and start moving messages.
pub async fn connect(
    name: &str,
    url: &http::Uri,
    limits: &Limits,
    client: &Client,
    mux: Option<Arc<Mux>>,
    connect_timeout: Duration,
) -> Result<Arc<MessageSession>, UpstreamError> {
    let err = |detail: String| UpstreamError::Protocol {
        upstream: name.to_owned(),
        detail,
    };
    let req = http::Request::get(url.clone())
        .header(http::header::ACCEPT, "text/event-stream")
        .body(Full::new(Bytes::new()))
        .expect("valid request");
    let resp = send(client, name, req, connect_timeout).await?;
    if !resp.status().is_success() {
        return Err(err(format!("GET {url} answered {}", resp.status())));
    }
    // The stream is the session's: it outlives the request that opened it.
    let mut body = resp.into_body().unbounded();
    let mut parser = Parser::new(limits.max_message_bytes);
    let endpoint = tokio::time::timeout(connect_timeout, async {
        loop {
            if let Some(ev) = parser.next_event().map_err(|e| err(e.to_string()))? {
                if ev.kind() == "endpoint" {
                    return Ok(ev.data);
                }
                continue;
            }
            match body.frame().await {
                Some(Ok(f)) => {
                    if let Some(d) = f.data_ref() {
                        parser.push(d);
                    }
                }
                Some(Err(e)) => return Err(err(format!("stream failed: {e}"))),
                None => return Err(err("stream ended before the endpoint event".into())),
            }
        }
    })
    .await
    .map_err(|_| UpstreamError::Timeout {
        upstream: name.to_owned(),
        seconds: connect_timeout.as_secs(),
    })??;
    let post_url = resolve(url, endpoint.trim()).ok_or_else(|| {
        err(format!(
            "endpoint \"{endpoint}\" is not a URL on the same origin as {url}"
        ))
    })?;
    tracing::info!(upstream = name, endpoint = %post_url, "connected to legacy SSE upstream");

    let session = MessageSession::new(name.into(), mux);
    tokio::spawn(read_events(body, parser, session.clone()));
    tokio::spawn(post_messages(
        client.clone(),
        post_url,
        session.clone(),
        limits.request_timeout_secs,
    ));
    Ok(session)
}

/// Resolve the endpoint against the SSE URL, as an opaque relative URL, and
/// refuse one on another origin (it would receive the session's messages).
fn resolve(base: &http::Uri, endpoint: &str) -> Option<http::Uri> {
    let origin = format!("{}://{}", base.scheme_str()?, base.authority()?);
    let full = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else if endpoint.starts_with('/') {
        format!("{origin}{endpoint}")
    } else {
        let path = base.path();
        let dir = &path[..path.rfind('/').map(|i| i + 1).unwrap_or(0)];
        format!("{origin}{dir}{endpoint}")
    };
    let uri: http::Uri = full.parse().ok()?;
    (uri.scheme() == base.scheme() && uri.authority() == base.authority()).then_some(uri)
}

async fn read_events(mut body: UpstreamBody, mut parser: Parser, session: Arc<MessageSession>) {
    let reason = loop {
        loop {
            match parser.next_event() {
                Ok(Some(ev)) if ev.kind() == "message" && ev.has_data => {
                    session.deliver(Bytes::from(ev.data)).await;
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    session.close(e.to_string());
                    return;
                }
            }
        }
        let frame = tokio::select! {
            f = body.frame() => f,
            _ = session.closed().cancelled() => return,
        };
        match frame {
            Some(Ok(f)) => {
                if let Some(d) = f.data_ref() {
                    parser.push(d);
                }
            }
            Some(Err(e)) => break format!("SSE stream failed: {e}"),
            None => break "closed its SSE stream".to_owned(),
        }
    };
    session.close(reason);
}

async fn post_messages(
    client: Client,
    url: http::Uri,
    session: Arc<MessageSession>,
    timeout_secs: u64,
) {
    // One at a time: the server must see messages in the order the client
    // sent them (initialize, then initialized, then the rest).
    loop {
        let message = tokio::select! {
            m = session.outgoing() => m,
            _ = session.closed().cancelled() => break,
        };
        let req = http::Request::post(url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(message.clone()))
            .expect("valid request");
        let outcome = match send(
            &client,
            session.upstream(),
            req,
            Duration::from_secs(timeout_secs),
        )
        .await
        {
            Ok(resp) if resp.status().is_success() => continue,
            Ok(resp) => format!("answered {} to a message", resp.status()),
            Err(e) => e.to_string(),
        };
        tracing::warn!(upstream = %session.upstream(), %outcome, "legacy SSE upstream refused a message");
        // A refused request would otherwise wait for a response forever.
        if let Ok(m) = jsonrpc::classify_one(&message)
            && m.kind == Kind::Request
            && let Some(id) = m.id
        {
            let failure = Failure::Ended {
                upstream: session.upstream().to_owned(),
                what: outcome,
            };
            session.fail(&jsonrpc::id_key(id), failure);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_endpoints_like_a_browser() {
        let base: http::Uri = "http://127.0.0.1:3001/sse".parse().unwrap();
        assert_eq!(
            resolve(&base, "/messages?sessionId=1").unwrap().to_string(),
            "http://127.0.0.1:3001/messages?sessionId=1"
        );
        assert_eq!(
            resolve(&base, "messages/?session_id=ab")
                .unwrap()
                .to_string(),
            "http://127.0.0.1:3001/messages/?session_id=ab"
        );
        let nested: http::Uri = "http://h:1/a/b/sse".parse().unwrap();
        assert_eq!(
            resolve(&nested, "m?x=1").unwrap().to_string(),
            "http://h:1/a/b/m?x=1"
        );
        assert!(resolve(&base, "http://evil.example/messages").is_none());
    }
}
