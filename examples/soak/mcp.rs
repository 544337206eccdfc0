//! The soak's MCP client over streamable HTTP: sessions opened, called and
//! closed as a host would, each exchange bounded by [`CALL_TIMEOUT`], and
//! what the checks read of a `tools/list`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_ui_wire::sse;
use serde_json::{Value, json};

/// Bound on one exchange; a call that takes longer counts as an error.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const PROTOCOL: &str = "2025-11-25";
const ACCEPT: &str = "application/json, text/event-stream";

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A client keeping up to `idle` connections to the gateway.
pub fn client(idle: usize) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(idle)
        .build(connector)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mount {
    Demo,
    Echo,
}

pub struct Session {
    pub mount: Mount,
    pub url: String,
    pub id: String,
    pub version: String,
    /// Held while a call of the driver is in flight on this session.
    pub busy: Arc<tokio::sync::Mutex<()>>,
}

fn post(session_url: &str, session: Option<&Session>, body: &Value) -> Request<Full<Bytes>> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(session_url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT);
    if let Some(s) = session {
        request = request
            .header("mcp-session-id", &s.id)
            .header("mcp-protocol-version", &s.version);
    }
    request
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request")
}

pub async fn send(
    client: &HttpClient,
    request: Request<Full<Bytes>>,
) -> anyhow::Result<Response<Incoming>> {
    tokio::time::timeout(CALL_TIMEOUT, client.request(request))
        .await
        .map_err(|_| anyhow!("timeout: no response head in {CALL_TIMEOUT:?}"))?
        .map_err(|e| anyhow!("transport: {e}"))
}

/// The JSON-RPC response to request `id` in a JSON or SSE body.
async fn response_message(response: Response<Incoming>, id: u64) -> anyhow::Result<Value> {
    let status = response.status();
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = tokio::time::timeout(CALL_TIMEOUT, response.into_body().collect())
        .await
        .map_err(|_| anyhow!("timeout: body not complete in {CALL_TIMEOUT:?}"))?
        .map_err(|e| anyhow!("transport: body: {e}"))?
        .to_bytes();
    if status != StatusCode::OK {
        bail!("http {status}: {}", String::from_utf8_lossy(&body));
    }
    let messages: Vec<Value> = if sse {
        let mut parser = sse::Parser::new(usize::MAX);
        parser.push(&body);
        let mut out = Vec::new();
        while let Some(event) = parser.next_event()? {
            if event.has_data
                && let Ok(v) = serde_json::from_str(&event.data)
            {
                out.push(v);
            }
        }
        out
    } else {
        vec![serde_json::from_slice(&body).context("bad body: not JSON")?]
    };
    messages
        .into_iter()
        .find(|m| m.get("id") == Some(&json!(id)))
        .ok_or_else(|| anyhow!("bad body: no response to request {id}"))
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub async fn open_session(
    client: &HttpClient,
    mount: Mount,
    url: String,
) -> anyhow::Result<Session> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let init = json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": { "name": "soak", "version": "1" }
        }
    });
    let response = send(client, post(&url, None, &init)).await?;
    let session_id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no Mcp-Session-Id on the initialize answer"))?;
    let answer = response_message(response, id).await?;
    let version = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("initialize failed: {answer}"))?
        .to_owned();
    let session = Session {
        mount,
        url,
        id: session_id,
        version,
        busy: Arc::default(),
    };
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let response = send(client, post(&session.url, Some(&session), &note)).await?;
    if response.status() != StatusCode::ACCEPTED {
        bail!("notifications/initialized: http {}", response.status());
    }
    Ok(session)
}

pub async fn delete_session(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let request = Request::builder()
        .method(Method::DELETE)
        .uri(&session.url)
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", &session.version)
        .body(Full::new(Bytes::new()))?;
    let response = send(client, request).await?;
    if !response.status().is_success() {
        bail!("DELETE: http {}", response.status());
    }
    Ok(())
}

/// One request; `Ok` is the `result`, a JSON-RPC error is an `Err`.
pub async fn call(
    client: &HttpClient,
    session: &Session,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let response = send(client, post(&session.url, Some(session), &body)).await?;
    let mut answer = response_message(response, id).await?;
    if let Some(error) = answer.get("error") {
        bail!("jsonrpc error {}: {error}", error["code"]);
    }
    answer
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| anyhow!("bad body: neither result nor error"))
}

pub fn show_tasks_uri(tools: &Value) -> anyhow::Result<String> {
    tools["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "show_tasks"))
        .and_then(|t| t.pointer("/_meta/ui/resourceUri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("check: tools/list has no show_tasks with _meta.ui.resourceUri"))
}

pub fn tool_title(tools: &Value, name: &str) -> Option<String> {
    tools["tools"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)?
        .get("title")?
        .as_str()
        .map(str::to_owned)
}
