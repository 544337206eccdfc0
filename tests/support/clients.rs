//! Test clients: rmcp clients in either protocol era with a handler that answers
//! sampling, elicitation and roots and records notifications, plus raw HTTP and SSE
//! helpers (hyper-util) for byte-exact assertions.
#![allow(deprecated)] // sampling, roots and logging are SEP-2577-deprecated in rmcp

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context as _, anyhow};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{HeaderMap, Method, Request, StatusCode, body::Incoming};
use hyper_util::{client::legacy::Client as HyperClient, rt::TokioExecutor};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, ErrorData, RoleClient,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ElicitationAction, Implementation, ListRootsResult, LoggingMessageNotificationParam,
        ProgressNotificationParam, ProtocolVersion, Root, SamplingMessage,
    },
    service::{NotificationContext, RequestContext, RunningService},
    transport::{
        IntoTransport, StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

/// What [`TestClient`] answers to `sampling/createMessage`.
pub const SAMPLING_REPLY: &str = "sampled by the test client";
pub const SAMPLING_MODEL: &str = "test-model";
/// The `content` [`TestClient`] accepts elicitations with.
pub fn elicitation_content() -> Value {
    json!({ "answer": "yes" })
}
/// The single root [`TestClient`] lists.
pub const ROOT_URI: &str = "file:///tmp/mcp-ui-gateway-tests";
pub const ROOT_NAME: &str = "tests";

/// Bound on connecting (rmcp's own `Auto` discover timeout is 10 s) and on one call.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound on one raw HTTP exchange.
pub const RAW_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// How a client establishes its MCP lifecycle.
///
/// Note that rmcp's plain `ServiceExt::serve` is neither `Modern` nor a 2025 pin: it
/// sends `initialize` naming `2026-07-28`, and an rmcp server answers that with
/// `2025-11-25` (the newest revision that still has `initialize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// `server/discover`, then sessionless `2026-07-28` requests carrying the
    /// lifecycle in `_meta` (rmcp `ClientLifecycleMode::Discover`). Fails against a
    /// server that predates `2026-07-28`.
    Modern,
    /// rmcp `ClientLifecycleMode::Auto`: `server/discover` first; if the server answers
    /// with a (non-modern) JSON-RPC error, `initialize` at `2025-11-25`.
    Auto,
    /// `initialize` pinned at this revision; over HTTP the server mints an
    /// `Mcp-Session-Id` (rmcp `ClientLifecycleMode::Initialize`).
    Initialize(ProtocolVersion),
}

impl Era {
    /// The 2025-era session most hosts speak today.
    pub fn legacy() -> Self {
        Self::Initialize(ProtocolVersion::V_2025_11_25)
    }

    /// One client per era worth covering against a full-featured upstream.
    pub fn matrix() -> Vec<Self> {
        vec![
            Self::Modern,
            Self::Initialize(ProtocolVersion::V_2025_11_25),
            Self::Initialize(ProtocolVersion::V_2025_06_18),
        ]
    }

    pub fn lifecycle(&self) -> ClientLifecycleMode {
        match self {
            Self::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            Self::Initialize(_) => ClientLifecycleMode::Initialize,
        }
    }

    /// The version the client puts in its `initialize` request (unused by discover).
    pub fn initialize_version(&self) -> ProtocolVersion {
        match self {
            Self::Initialize(version) => version.clone(),
            Self::Modern | Self::Auto => ProtocolVersion::V_2026_07_28,
        }
    }
}

/// Everything the server sent to a [`TestClient`] other than responses.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    /// Methods of the server-to-client requests (or MRTR input requests) answered.
    requests: Arc<Mutex<Vec<String>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Recorder {
    pub fn progress(&self) -> Vec<ProgressNotificationParam> {
        lock(&self.progress).clone()
    }

    pub fn logs(&self) -> Vec<LoggingMessageNotificationParam> {
        lock(&self.logs).clone()
    }

    pub fn requests(&self) -> Vec<String> {
        lock(&self.requests).clone()
    }

    /// Notifications are dispatched separately from responses, so a test may need to
    /// wait a moment for ones sent just before the response.
    pub async fn wait_for_progress(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Vec<ProgressNotificationParam> {
        wait_until(timeout, || {
            let progress = self.progress();
            (progress.len() >= count).then_some(progress)
        })
        .await
        .unwrap_or_else(|| self.progress())
    }

    pub async fn wait_for_logs(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Vec<LoggingMessageNotificationParam> {
        wait_until(timeout, || {
            let logs = self.logs();
            (logs.len() >= count).then_some(logs)
        })
        .await
        .unwrap_or_else(|| self.logs())
    }
}

/// Polls `check` until it yields a value or `timeout` passes.
pub async fn wait_until<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// The client handler: answers every server-to-client request with fixed data.
#[derive(Debug, Clone)]
pub struct TestClient {
    pub recorder: Recorder,
    info: ClientConfig,
}

impl TestClient {
    pub fn new(era: &Era) -> Self {
        let capabilities = ClientCapabilities::builder()
            .enable_roots()
            .enable_sampling()
            .enable_elicitation()
            .build();
        let info = ClientConfig::new(
            capabilities,
            Implementation::new("mcp-ui-gateway-test-client", "0.0.0"),
        )
        .with_protocol_version(era.initialize_version());
        Self {
            recorder: Recorder::default(),
            info,
        }
    }

    fn record_request(&self, method: &str) {
        lock(&self.recorder.requests).push(method.to_owned());
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.record_request("sampling/createMessage");
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(SAMPLING_REPLY),
            SAMPLING_MODEL.to_owned(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.record_request("elicitation/create");
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(elicitation_content()))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.record_request("roots/list");
        Ok(ListRootsResult::new(vec![
            Root::new(ROOT_URI).with_name(ROOT_NAME),
        ]))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        lock(&self.recorder.progress).push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        lock(&self.recorder.logs).push(params);
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

/// Starts a [`TestClient`] in `era` over any rmcp client transport.
pub async fn connect<T, E, A>(transport: T, era: &Era) -> anyhow::Result<Client>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let handler = TestClient::new(era);
    tokio::time::timeout(
        CONNECT_TIMEOUT,
        handler.serve_with_lifecycle(transport, era.lifecycle()),
    )
    .await
    .map_err(|_| anyhow!("{era:?} client did not start within {CONNECT_TIMEOUT:?}"))?
    .with_context(|| format!("{era:?} client failed to start"))
}

/// Connects to a streamable HTTP endpoint.
pub async fn connect_http(url: &str, era: &Era) -> anyhow::Result<Client> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    connect(transport, era).await
}

/// Spawns `command` and connects to it over stdio (rmcp's child-process transport).
pub async fn connect_stdio(command: tokio::process::Command, era: &Era) -> anyhow::Result<Client> {
    let transport = TokioChildProcess::new(command).context("spawn stdio server")?;
    connect(transport, era).await
}

/// The negotiated protocol version as the client sees it.
pub fn negotiated_version(client: &Client) -> Option<ProtocolVersion> {
    client.peer_info().map(|info| info.protocol_version.clone())
}

/// Calls `tool` with `arguments` (a JSON object), driving MRTR rounds if the server
/// asks for input. rmcp attaches a fresh `_meta.progressToken` to every request.
pub async fn call(client: &Client, tool: &str, arguments: Value) -> anyhow::Result<CallToolResult> {
    let Value::Object(arguments) = arguments else {
        return Err(anyhow!("tool arguments must be a JSON object"));
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    tokio::time::timeout(CALL_TIMEOUT, client.call_tool(params))
        .await
        .map_err(|_| anyhow!("{tool} did not answer within {CALL_TIMEOUT:?}"))?
        .with_context(|| format!("call {tool}"))
}

/// Text of the first content block.
pub fn first_text(result: &CallToolResult) -> Option<&str> {
    result
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|text| text.text.as_str())
}

/// [`call`] and return the first text block, failing on `isError`.
pub async fn call_text(client: &Client, tool: &str, arguments: Value) -> anyhow::Result<String> {
    let result = call(client, tool, arguments).await?;
    if result.is_error == Some(true) {
        return Err(anyhow!("{tool} returned isError: {result:?}"));
    }
    first_text(&result)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{tool} returned no text: {result:?}"))
}

// ----------------------------------------------------------------------------------
// Raw HTTP
// ----------------------------------------------------------------------------------

fn hyper_client() -> HyperClient<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    HyperClient::builder(TokioExecutor::new()).build_http()
}

fn build_request(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> anyhow::Result<Request<Full<Bytes>>> {
    let mut builder = Request::builder().method(method).uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    Ok(builder.body(Full::new(body))?)
}

async fn send(request: Request<Full<Bytes>>) -> anyhow::Result<hyper::Response<Incoming>> {
    tokio::time::timeout(RAW_TIMEOUT, hyper_client().request(request))
        .await
        .map_err(|_| anyhow!("no response headers within {RAW_TIMEOUT:?}"))?
        .context("HTTP request failed")
}

/// Sends exactly the given headers and body and reads the whole response. For SSE
/// responses this only returns once the server ends the stream.
pub async fn request_raw(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> (StatusCode, HeaderMap, Bytes) {
    let exchange = async {
        let request = build_request(method, url, headers, body.into())?;
        let response = send(request).await?;
        let (parts, body) = response.into_parts();
        let bytes = body
            .collect()
            .await
            .context("read response body")?
            .to_bytes();
        anyhow::Ok((parts.status, parts.headers, bytes))
    };
    match tokio::time::timeout(RAW_TIMEOUT, exchange).await {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => panic!("raw request to {url} failed: {error:#}"),
        Err(_) => panic!("raw request to {url} took longer than {RAW_TIMEOUT:?}"),
    }
}

/// POSTs `body`. Adds `Content-Type: application/json` and
/// `Accept: application/json, text/event-stream` unless `headers` sets them (compared
/// case-insensitively); use [`request_raw`] to send neither.
pub async fn post_json(
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> (StatusCode, HeaderMap, Bytes) {
    let has = |wanted: &str| {
        headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(wanted))
    };
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if !has("content-type") {
        all.push(("content-type", "application/json"));
    }
    if !has("accept") {
        all.push(("accept", "application/json, text/event-stream"));
    }
    request_raw(Method::POST, url, &all, body).await
}

// ----------------------------------------------------------------------------------
// Raw SSE
// ----------------------------------------------------------------------------------

/// One server-sent event. Comment-only blocks are dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
    /// `data` lines joined with `\n`.
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_str(&self.data)
            .with_context(|| format!("SSE data is not JSON: {:?}", self.data))
    }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = SseEvent::default();
    let mut data: Option<Vec<&str>> = None;
    let mut any_field = false;
    for line in block.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        any_field = true;
        match field {
            "event" => event.event = Some(value.to_owned()),
            "id" => event.id = Some(value.to_owned()),
            "retry" => event.retry = value.parse().ok(),
            "data" => data.get_or_insert_with(Vec::new).push(value),
            _ => {}
        }
    }
    event.data = data.map(|lines| lines.join("\n")).unwrap_or_default();
    any_field.then_some(event)
}

/// Splits a complete SSE body into events.
pub fn parse_sse(body: &[u8]) -> Vec<SseEvent> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    text.split("\n\n").filter_map(parse_block).collect()
}

/// An open SSE response read incrementally.
pub struct SseReader {
    body: Incoming,
    buffer: String,
    ready: VecDeque<SseEvent>,
}

impl SseReader {
    /// The next event, `None` when the server ended the stream.
    pub async fn next_event(&mut self, timeout: Duration) -> anyhow::Result<Option<SseEvent>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .map_err(|_| anyhow!("no SSE event within {timeout:?}"))?;
            let Some(frame) = frame else {
                let rest = std::mem::take(&mut self.buffer);
                return Ok(parse_block(&rest));
            };
            let Ok(data) = frame.context("read SSE stream")?.into_data() else {
                continue;
            };
            self.buffer
                .push_str(&String::from_utf8_lossy(&data).replace("\r\n", "\n"));
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse_block(&block) {
                    self.ready.push_back(event);
                }
            }
        }
    }

    /// Skips events until one named `event` (`message` when unnamed) arrives.
    pub async fn next_named(&mut self, name: &str, timeout: Duration) -> anyhow::Result<SseEvent> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let event = self
                .next_event(left)
                .await?
                .ok_or_else(|| anyhow!("SSE stream ended before a {name:?} event"))?;
            if event.event.as_deref().unwrap_or("message") == name {
                return Ok(event);
            }
        }
    }
}

/// Sends a request and returns its status and headers with the body as an SSE reader.
pub async fn open_sse(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> anyhow::Result<(StatusCode, HeaderMap, SseReader)> {
    let request = build_request(method, url, headers, body.into())?;
    let response = send(request).await?;
    let (parts, body) = response.into_parts();
    let reader = SseReader {
        body,
        buffer: String::new(),
        ready: VecDeque::new(),
    };
    Ok((parts.status, parts.headers, reader))
}

/// A legacy HTTP+SSE (2024-11-05) session opened by hand: the SSE stream plus the
/// POST URL announced in its `endpoint` event.
pub struct LegacySseSession {
    pub events: SseReader,
    /// The endpoint event's data, verbatim.
    pub endpoint: String,
    /// `endpoint` resolved against the SSE URL.
    pub post_url: String,
}

/// `GET url` and wait for the `endpoint` event.
pub async fn open_legacy_sse(url: &str) -> anyhow::Result<LegacySseSession> {
    let (status, headers, mut events) = open_sse(
        Method::GET,
        url,
        &[("accept", "text/event-stream")],
        Bytes::new(),
    )
    .await?;
    if status != StatusCode::OK {
        return Err(anyhow!("GET {url} answered {status}"));
    }
    let content_type = headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !content_type.starts_with("text/event-stream") {
        return Err(anyhow!("GET {url} answered Content-Type {content_type:?}"));
    }
    let endpoint = events.next_named("endpoint", RAW_TIMEOUT).await?.data;
    let post_url = resolve_url(url, &endpoint)?;
    Ok(LegacySseSession {
        events,
        endpoint,
        post_url,
    })
}

impl LegacySseSession {
    /// POSTs one JSON-RPC message; legacy servers answer 202 and reply on the stream.
    pub async fn post(&self, message: &Value) -> StatusCode {
        let (status, _, _) = post_json(&self.post_url, &[], message.to_string()).await;
        status
    }

    /// POSTs a request and waits for the `message` event carrying its response.
    pub async fn request(&mut self, message: &Value) -> anyhow::Result<Value> {
        let status = self.post(message).await;
        if status != StatusCode::ACCEPTED {
            return Err(anyhow!("POST {} answered {status}", self.post_url));
        }
        let deadline = tokio::time::Instant::now() + RAW_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let reply = self.events.next_named("message", left).await?.json()?;
            if reply.get("id") == message.get("id") && reply.get("method").is_none() {
                return Ok(reply);
            }
        }
    }
}

/// Resolves an absolute-path or absolute URL reference against `base` (only the
/// forms MCP servers put in `endpoint` events).
pub fn resolve_url(base: &str, reference: &str) -> anyhow::Result<String> {
    if reference.starts_with("http://") || reference.starts_with("https://") {
        return Ok(reference.to_owned());
    }
    let uri: hyper::Uri = base.parse().context("parse base URL")?;
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = uri.authority().context("base URL has no authority")?;
    if reference.starts_with('/') {
        return Ok(format!("{scheme}://{authority}{reference}"));
    }
    let path = uri.path();
    let dir = &path[..path.rfind('/').map_or(0, |index| index + 1)];
    Ok(format!("{scheme}://{authority}{dir}{reference}"))
}

// ----------------------------------------------------------------------------------
// Answers read raw
// ----------------------------------------------------------------------------------

/// A body that must be JSON (the test fails naming it otherwise).
pub fn body_json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

/// The message of a JSON-RPC error answer (the test fails otherwise).
pub fn error_message(bytes: &[u8]) -> String {
    body_json(bytes)["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no JSON-RPC error: {}", String::from_utf8_lossy(bytes)))
        .to_owned()
}

/// Opens a session with `initialize` (as `client`) and
/// `notifications/initialized`; its id.
pub async fn open_session(url: &str, client: &str) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": client, "version": "1"}}});
    let (status, headers, body) = post_json(url, &[], init.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, _) = post_json(url, &[("mcp-session-id", &sid)], initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    sid
}
