//! The bundled legacy demo MCP server: an in-memory task list with no UI metadata at all.
//!
//! It is deliberately "legacy style" (plain text content holding JSON, no
//! `structuredContent`, no `outputSchema`, no `_meta`) so that everything UI-related a
//! client sees through the gateway provably comes from the gateway's overlays.

pub mod overlays;

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Request, Response, StatusCode, body::Incoming};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::{conn::auto, graceful::GracefulShutdown},
};
use rmcp::{
    ErrorData, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
    transport::{
        io::stdio_pipes,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Server name reported in `serverInfo`.
pub const SERVER_NAME: &str = "task-list-demo";
/// The HTTP path the streamable HTTP endpoint is served at.
pub const HTTP_PATH: &str = "/mcp";

/// How long `serve_http` waits for open connections (e.g. SSE streams) to finish after
/// shutdown before giving up on them.
const HTTP_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop cannot spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Task {
    id: u64,
    title: String,
    done: bool,
}

#[derive(Debug)]
struct Store {
    next_id: u64,
    tasks: Vec<Task>,
}

/// Task storage shared by every session served by one process, so that a task added
/// through one client connection is visible to the next one.
#[derive(Debug, Clone)]
struct TaskStore(Arc<Mutex<Store>>);

impl TaskStore {
    fn seeded() -> Self {
        let titles = [
            ("Water the plants", true),
            ("Write the release notes", false),
            ("Book the team dinner", false),
        ];
        let tasks: Vec<Task> = titles
            .iter()
            .zip(1..)
            .map(|((title, done), id)| Task {
                id,
                title: (*title).to_owned(),
                done: *done,
            })
            .collect();
        Self(Arc::new(Mutex::new(Store {
            next_id: tasks.len() as u64 + 1,
            tasks,
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave the store half-updated (every
        // mutation is a single push or field write), so a poisoned lock is still usable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn list(&self) -> Vec<Task> {
        self.lock().tasks.clone()
    }

    fn add(&self, title: String) -> Task {
        let mut store = self.lock();
        let task = Task {
            id: store.next_id,
            title,
            done: false,
        };
        store.next_id += 1;
        store.tasks.push(task.clone());
        task
    }

    fn complete(&self, id: u64) -> Option<Task> {
        let mut store = self.lock();
        let task = store.tasks.iter_mut().find(|task| task.id == id)?;
        task.done = true;
        Some(task.clone())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct AddTaskArgs {
    /// Title of the new task.
    title: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct CompleteTaskArgs {
    /// Id of the task to mark as done.
    id: u64,
}

/// One MCP server instance; cheap to clone, all instances of a process share the store.
#[derive(Debug, Clone)]
struct TaskListDemo {
    store: TaskStore,
    tool_router: ToolRouter<Self>,
}

/// Legacy servers answer with a single text item carrying JSON; nothing structured.
fn json_text(value: serde_json::Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.is_error = None;
    result
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[tool_router]
impl TaskListDemo {
    fn new(store: TaskStore) -> Self {
        Self {
            store,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "List all tasks with their id, title and completion state.")]
    async fn list_tasks(&self) -> Result<CallToolResult, ErrorData> {
        Ok(json_text(json!({ "tasks": self.store.list() })))
    }

    #[tool(
        description = "Return the current task list, like list_tasks. For the task board widget's Refresh button; the model should call list_tasks."
    )]
    async fn refresh_tasks(&self) -> Result<CallToolResult, ErrorData> {
        Ok(json_text(json!({ "tasks": self.store.list() })))
    }

    #[tool(description = "Add a task with the given title and return it.")]
    async fn add_task(
        &self,
        Parameters(args): Parameters<AddTaskArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let title = args.title.trim();
        if title.is_empty() {
            return Ok(tool_error("title must not be empty".to_owned()));
        }
        let task = self.store.add(title.to_owned());
        Ok(json_text(json!(task)))
    }

    #[tool(description = "Mark the task with the given id as done and return it.")]
    async fn complete_task(
        &self,
        Parameters(args): Parameters<CompleteTaskArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.store.complete(args.id) {
            Some(task) => Ok(json_text(json!(task))),
            None => Ok(tool_error(format!("no task with id {}", args.id))),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TaskListDemo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions("A small task list. Use list_tasks to see the tasks.")
    }
}

/// Serves the demo over stdin/stdout until stdin reaches EOF.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let server = TaskListDemo::new(TaskStore::seeded())
        .serve(stdio_pipes())
        .await?;
    server.waiting().await?;
    Ok(())
}

/// Serves the demo as streamable HTTP at [`HTTP_PATH`] on `listener`, with stateful
/// sessions for pre-2026 clients, until `shutdown` is cancelled.
pub async fn serve_http(listener: TcpListener, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mcp = http_service(listener.local_addr()?, &shutdown);

    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "demo server: accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    continue;
                }
            },
        };
        // Responses go out in more than one write; without this a client's
        // delayed ACK holds the second one back ~40 ms.
        let _ = stream.set_nodelay(true);
        let mcp = mcp.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let mcp = mcp.clone();
            async move {
                if request.uri().path() == HTTP_PATH {
                    Ok::<_, Infallible>(mcp.handle(request).await)
                } else {
                    Ok(not_found())
                }
            }
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "demo server: connection ended with an error");
            }
        });
    }
    if tokio::time::timeout(HTTP_DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("demo server: connections still open after the drain timeout");
    }
    Ok(())
}

type DemoService = StreamableHttpService<TaskListDemo, LocalSessionManager>;

/// The demo's MCP service for a listener on `local`. On a loopback address it
/// answers only loopback `Host` names (rmcp's DNS-rebinding defence); on any
/// other it answers every `Host`, as the gateway does with no `allowed_hosts`:
/// beside the gateway in a cluster it is reached by its service name.
fn http_service(local: SocketAddr, shutdown: &CancellationToken) -> DemoService {
    let store = TaskStore::seeded();
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        // rmcp ends its SSE streams and session workers on this token; without it
        // graceful shutdown would wait for every open stream until the drain timeout.
        .with_cancellation_token(shutdown.child_token());
    if !local.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(TaskListDemo::new(store.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

fn not_found() -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(b"Not Found")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_is_seeded_and_assigns_fresh_ids() {
        let store = TaskStore::seeded();
        let seeded = store.list();
        assert!((2..=3).contains(&seeded.len()));
        let added = store.add("New".to_owned());
        assert_eq!(added.id, seeded.len() as u64 + 1);
        assert!(!added.done);
        assert_eq!(store.complete(added.id).map(|task| task.done), Some(true));
        assert_eq!(store.complete(9999), None);
    }

    /// An `initialize` POST naming `host`, through the service for a
    /// listener on `local` (no socket: the service is called directly).
    async fn initialize_with_host(local: &str, host: &str) -> StatusCode {
        let mcp = http_service(local.parse().unwrap(), &CancellationToken::new());
        let request = Request::post(HTTP_PATH)
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            )))
            .unwrap();
        mcp.handle(request).await.status()
    }

    #[tokio::test]
    async fn beyond_loopback_the_demo_answers_its_service_name() {
        // In a cluster the gateway reaches it as http://mcp-ui-gateway-demo:3001.
        let status = initialize_with_host("0.0.0.0:3001", "mcp-ui-gateway-demo:3001").await;
        assert_eq!(status, StatusCode::OK);
        // On loopback, only loopback names pass.
        let status = initialize_with_host("127.0.0.1:3001", "mcp-ui-gateway-demo:3001").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let status = initialize_with_host("127.0.0.1:3001", "127.0.0.1:3001").await;
        assert_eq!(status, StatusCode::OK);
    }

    #[test]
    fn clones_share_one_store() {
        let store = TaskStore::seeded();
        let other = TaskListDemo::new(store.clone());
        other.store.add("Shared".to_owned());
        assert!(store.list().iter().any(|task| task.title == "Shared"));
    }

    #[test]
    fn tools_are_plain_legacy_tools() {
        let server = TaskListDemo::new(TaskStore::seeded());
        let mut names: Vec<String> = server
            .tool_router
            .list_all()
            .into_iter()
            .map(|tool| {
                assert!(
                    tool.output_schema.is_none(),
                    "{} has outputSchema",
                    tool.name
                );
                assert!(tool.meta.is_none(), "{} has _meta", tool.name);
                tool.name.into_owned()
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["add_task", "complete_task", "list_tasks", "refresh_tasks"]
        );
    }

    #[test]
    fn results_are_text_only() {
        let result = json_text(json!({ "tasks": [] }));
        let wire = serde_json::to_value(&result).expect("serialise");
        assert!(wire.get("structuredContent").is_none());
        assert_eq!(wire["content"][0]["type"], "text");
        assert_eq!(wire["content"][0]["text"], r#"{"tasks":[]}"#);
    }
}
