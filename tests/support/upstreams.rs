//! Starts the fixture MCP server as an upstream on 127.0.0.1: streamable HTTP (rmcp's
//! `StreamableHttpService` on hyper), legacy HTTP+SSE (2024-11-05, hand-written because
//! rmcp 3.x has no such server) and stdio (the `mcp-fixture-server` bin).

use std::{
    collections::HashMap,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Frame, Incoming},
    header,
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::{conn::auto, graceful::GracefulShutdown},
};
use rmcp::{
    ServiceExt as _,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, WriteHalf},
    net::TcpListener,
    sync::mpsc,
    task::JoinHandle,
};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use super::fixture::{FixtureServer, ProtocolMode};

pub type BoxResponse = Response<BoxBody<Bytes, Infallible>>;

/// Path of the streamable HTTP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// Paths of the legacy HTTP+SSE endpoints.
pub const SSE_PATH: &str = "/sse";
pub const MESSAGES_PATH: &str = "/messages";
/// Path of the fixture bin, for stdio upstreams and rmcp's child-process transport.
pub const STDIO_COMMAND: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// A stdio MCP server in a few lines of Python (`python3 -c ENV_ECHO_SERVER
/// VAR`) whose `whoami` tool answers its environment variable `VAR`: what
/// the gateway started it with.
pub const ENV_ECHO_SERVER: &str = r#"
import json, os, sys
var = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "whoami", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        r = {"content": [{"type": "text", "text": os.environ.get(var, "(unset)")}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

/// How long shutdown waits for open connections (long-lived SSE streams) to close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);
const MAX_POST_BYTES: usize = 4 * 1024 * 1024;
/// Capacity of one legacy SSE stream's outgoing queue and of its fixture pipe.
const SSE_QUEUE: usize = 64;
const SSE_PIPE_BYTES: usize = 1 << 16;

/// A running upstream. Dropping it (or [`Upstream::cancel`]) stops the server; use
/// [`Upstream::shutdown`] to also wait until it has stopped.
#[derive(Debug)]
pub struct Upstream {
    /// The MCP endpoint: `…/mcp` for streamable HTTP, `…/sse` for legacy SSE.
    pub url: String,
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Upstream {
    /// `http://127.0.0.1:<port>`, without a path.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn cancel(&self) {
        self.shutdown.cancel();
    }

    /// Stops the server and waits for it, bounded by the connection drain timeout.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(DRAIN_TIMEOUT * 2, task).await;
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Response style of a streamable HTTP upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFlavor {
    /// `initialize` creates an `Mcp-Session-Id` session; every response is an SSE
    /// stream; GET opens the standalone stream and DELETE ends the session. Requests
    /// naming `2026-07-28` are always served statelessly (rmcp, per SEP-2567).
    StatefulSse,
    /// No sessions; a request whose handler emits nothing before its response gets
    /// `application/json`, otherwise rmcp falls back to SSE. rmcp only offers JSON
    /// responses without sessions. Server-to-client requests (sampling, elicitation,
    /// roots) are therefore impossible for pre-2026 clients here.
    StatelessJson,
}

/// Starts the fixture (all protocol revisions) as a streamable HTTP upstream.
pub async fn start_http(flavor: HttpFlavor) -> anyhow::Result<Upstream> {
    start_http_with(flavor, ProtocolMode::All).await
}

pub async fn start_http_with(flavor: HttpFlavor, mode: ProtocolMode) -> anyhow::Result<Upstream> {
    start_http_watched(flavor, mode, |_| {}).await
}

/// [`start_http_with`], `watch` seeing every request's head before the fixture
/// answers it (what an upstream is told besides the messages).
pub async fn start_http_watched(
    flavor: HttpFlavor,
    mode: ProtocolMode,
    watch: impl Fn(&Request<Incoming>) + Clone + Send + Sync + 'static,
) -> anyhow::Result<Upstream> {
    let shutdown = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(flavor == HttpFlavor::StatefulSse)
        .with_json_response(flavor == HttpFlavor::StatelessJson)
        // rmcp closes its SSE streams and session workers on this token, which lets
        // the graceful shutdown below finish promptly.
        .with_cancellation_token(shutdown.child_token());
    let mcp = StreamableHttpService::new(
        move || Ok(FixtureServer::new(mode)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let handler = move |request: Request<Incoming>| {
        let mcp = mcp.clone();
        watch(&request);
        async move {
            if request.uri().path() == MCP_PATH {
                mcp.handle(request).await
            } else {
                plain(StatusCode::NOT_FOUND, "Not Found")
            }
        }
    };
    spawn_server(shutdown, MCP_PATH, handler).await
}

/// Starts the fixture as a legacy HTTP+SSE (2024-11-05) upstream: `GET /sse` and
/// `POST /messages?sessionId=<id>`, one fixture instance per SSE connection.
pub async fn start_sse() -> anyhow::Result<Upstream> {
    start_sse_with(ProtocolMode::All).await
}

pub async fn start_sse_with(mode: ProtocolMode) -> anyhow::Result<Upstream> {
    let shutdown = CancellationToken::new();
    let state = Arc::new(SseState {
        mode,
        shutdown: shutdown.clone(),
        sessions: Mutex::default(),
    });
    let handler = move |request: Request<Incoming>| {
        let state = state.clone();
        async move {
            match (request.method(), request.uri().path()) {
                (&Method::GET, SSE_PATH) => open_sse_session(&state),
                (&Method::POST, MESSAGES_PATH) => post_message(&state, request).await,
                (_, SSE_PATH | MESSAGES_PATH) => {
                    plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
                }
                _ => plain(StatusCode::NOT_FOUND, "Not Found"),
            }
        }
    };
    spawn_server(shutdown, SSE_PATH, handler).await
}

/// A command that runs the fixture over stdio.
pub fn stdio_command(mode: ProtocolMode) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(STDIO_COMMAND);
    if mode == ProtocolMode::UpTo2025 {
        command.args(["--protocol", "2025"]);
    }
    command.kill_on_drop(true);
    command
}

pub fn plain(status: StatusCode, text: &'static str) -> BoxResponse {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// Binds 127.0.0.1:0 and serves `handler` until the returned upstream is cancelled.
pub async fn spawn_server<H, F>(
    shutdown: CancellationToken,
    path: &str,
    handler: H,
) -> anyhow::Result<Upstream>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = BoxResponse> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("bind 127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(accept_loop(listener, shutdown.clone(), handler));
    Ok(Upstream {
        url: format!("http://{addr}{path}"),
        addr,
        shutdown,
        task: Some(task),
    })
}

async fn accept_loop<H, F>(listener: TcpListener, shutdown: CancellationToken, handler: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = BoxResponse> + Send + 'static,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    continue;
                }
            },
        };
        let handler = handler.clone();
        let service = hyper::service::service_fn(move |request| {
            let response = handler(request);
            async move { Ok::<_, Infallible>(response.await) }
        });
        let connection = graceful.watch(
            builder
                .serve_connection(TokioIo::new(stream), service)
                .into_owned(),
        );
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()).await;
}

struct SseState {
    mode: ProtocolMode,
    shutdown: CancellationToken,
    /// Write side of each connected session's pipe into its fixture instance.
    sessions: Mutex<HashMap<String, Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>>>,
}

impl SseState {
    fn sessions(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>>>
    {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Forgets a session when its SSE stream ends. Dropping the pipe's write half gives the
/// fixture instance EOF, which ends it.
struct SessionGuard {
    state: Arc<SseState>,
    id: String,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.state.sessions().remove(&self.id);
    }
}

fn sse_event(event: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

fn open_sse_session(state: &Arc<SseState>) -> BoxResponse {
    let id = format!("{:032x}", rand::random::<u128>());
    let (fixture_io, gateway_io) = tokio::io::duplex(SSE_PIPE_BYTES);
    let (reader, writer) = tokio::io::split(gateway_io);
    state
        .sessions()
        .insert(id.clone(), Arc::new(tokio::sync::Mutex::new(writer)));

    let session_ct = state.shutdown.child_token();
    let mode = state.mode;
    let fixture_ct = session_ct.clone();
    tokio::spawn(async move {
        if let Ok(running) = FixtureServer::new(mode)
            .serve_with_ct(fixture_io, fixture_ct)
            .await
        {
            let _ = running.waiting().await;
        }
    });

    let (tx, rx) = mpsc::channel::<Bytes>(SSE_QUEUE);
    let endpoint = sse_event("endpoint", &format!("{MESSAGES_PATH}?sessionId={id}"));
    let guard = SessionGuard {
        state: state.clone(),
        id,
    };
    tokio::spawn(async move {
        let _guard = guard;
        let _stop_fixture = session_ct.clone().drop_guard();
        if tx.send(endpoint).await.is_err() {
            return;
        }
        let mut lines = BufReader::new(reader).lines();
        loop {
            let line = tokio::select! {
                () = session_ct.cancelled() => break,
                () = tx.closed() => break,
                line = lines.next_line() => line,
            };
            let Ok(Some(line)) = line else { break };
            if tx.send(sse_event("message", &line)).await.is_err() {
                break;
            }
        }
    });

    let body = StreamBody::new(ReceiverStream::new(rx).map(|bytes| Ok(Frame::data(bytes))));
    let mut response = Response::new(BodyExt::boxed(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    response
}

fn session_id_from_query(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
}

async fn post_message(state: &Arc<SseState>, request: Request<Incoming>) -> BoxResponse {
    let Some(id) = session_id_from_query(request.uri().query()).map(str::to_owned) else {
        return plain(StatusCode::BAD_REQUEST, "Missing sessionId");
    };
    let Some(writer) = state.sessions().get(&id).cloned() else {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    };
    let Ok(body) = Limited::new(request.into_body(), MAX_POST_BYTES)
        .collect()
        .await
    else {
        return plain(StatusCode::BAD_REQUEST, "Unreadable body");
    };
    // Re-encoding guarantees the single-line framing the fixture's stdio-style
    // transport needs, whatever whitespace the client used.
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(&body.to_bytes()) else {
        return plain(StatusCode::BAD_REQUEST, "Invalid JSON");
    };
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    let mut writer = writer.lock().await;
    if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
        return plain(StatusCode::NOT_FOUND, "Session closed");
    }
    plain(StatusCode::ACCEPTED, "Accepted")
}
