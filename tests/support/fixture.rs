//! The fixture MCP server shared by the integration tests and the `mcp-fixture-server` bin:
//! tools that exercise both directions of JSON-RPC (progress, logging, sampling,
//! elicitation, roots) plus two static text resources.
//!
//! This file is compiled into the bin as well as into the tests, so it may only use
//! normal `[dependencies]` (rmcp without `client`/`elicitation`) and items unused by one
//! of the two are expected.
#![allow(dead_code, deprecated)] // sampling, roots and logging are SEP-2577-deprecated in rmcp

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    handler::server::{
        router::tool::ToolRouter,
        tool::{InputResponses as MrtrResponses, RequestState},
        wrapper::{Json, Parameters},
    },
    model::{
        CallToolResponse, CallToolResult, ClientResult, ContentBlock, CreateMessageRequest,
        CreateMessageRequestParams, DiscoverResult, ElicitRequest, ElicitRequestParams, ErrorCode,
        Implementation, InputRequest, InputRequests, InputRequiredResult, ListResourcesResult,
        ListRootsRequest, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
        ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, SamplingMessage,
        ServerCapabilities, ServerConfig, ServerRequest, SetLevelRequestParams,
    },
    service::{MaybeSendFuture, RequestContext},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `serverInfo.name` of the fixture.
pub const FIXTURE_NAME: &str = "mcp-fixture";
/// `(uri, name, text)` of the two static resources.
pub const RESOURCES: [(&str, &str, &str); 2] = [
    (
        "fixture://static/hello.txt",
        "hello",
        "Hello from the fixture server.",
    ),
    (
        "fixture://static/notes.md",
        "notes",
        "# Notes\n\nA second, multi-line resource.\n",
    ),
];
/// Logger name on the fixture's `notifications/message`.
pub const LOGGER: &str = "fixture";
/// Upper bounds that keep a misbehaving test from parking the fixture forever.
pub const MAX_PROGRESS_STEPS: u32 = 100;
pub const MAX_SLOW_MS: u64 = 60_000;
/// Gap between progress notifications, so they are not all coalesced into one write.
const PROGRESS_STEP_GAP: Duration = Duration::from_millis(5);
/// The key of the single MRTR input request the fixture asks for.
const INPUT_KEY: &str = "fixture";

/// Which protocol revisions the fixture accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolMode {
    /// Everything rmcp 3.11 knows, `2024-11-05` up to `2026-07-28`.
    #[default]
    All,
    /// Behaves like a server written before `2026-07-28` (e.g. TS SDK v1 over stdio):
    /// `server/discover` is an unknown method (-32601) and `initialize` tops out at
    /// `2025-11-25`. Narrowing rmcp's `supported_protocol_versions` instead would make
    /// `server/discover` fail with -32022 (unsupported version), which rmcp's `Auto`
    /// client treats as version negotiation, not as a legacy server, and gives up.
    /// A request carrying inline `2026-07-28` metadata without discovery is still
    /// served; real old servers reject it, but rmcp clients never send one.
    UpTo2025,
}

impl ProtocolMode {
    /// Parses the bin's `--protocol` argument (`all` or `2025`).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "all" => Some(Self::All),
            "2025" | "2025-11-25" => Some(Self::UpTo2025),
            _ => None,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to return unchanged.
    pub text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AddOutput {
    pub sum: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProgressArgs {
    /// Number of `notifications/progress` to send before returning.
    pub steps: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SampleArgs {
    /// Prompt forwarded to the client in `sampling/createMessage`.
    pub prompt: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ElicitArgs {
    /// Message shown to the user in `elicitation/create`.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LogArgs {
    /// Data of the `notifications/message` the fixture sends.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlowArgs {
    /// Milliseconds to sleep before answering.
    pub ms: u64,
}

/// The fixture server. One instance per session (HTTP) or process (stdio).
#[derive(Debug, Clone)]
pub struct FixtureServer {
    mode: ProtocolMode,
    tool_router: ToolRouter<Self>,
}

impl Default for FixtureServer {
    fn default() -> Self {
        Self::new(ProtocolMode::All)
    }
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn uses_mrtr(context: &RequestContext<RoleServer>) -> bool {
    // From 2026-07-28 on, a server may not send requests to the client; it has to
    // return `input_required` and let the client retry (SEP-2322, MRTR).
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// What the client said to a sampling, elicitation or roots request.
enum ClientAnswer {
    Answer(Value),
    /// The request has to travel as an MRTR `input_required` result.
    Ask(InputRequiredResult),
}

/// Asks the client for input in whichever way the request's protocol revision allows.
async fn ask_client(
    context: &RequestContext<RoleServer>,
    state: Option<String>,
    responses: Option<rmcp::model::InputResponses>,
    request: InputRequest,
    tool: &str,
) -> Result<ClientAnswer, ErrorData> {
    if uses_mrtr(context) {
        if state.as_deref() == Some(tool)
            && let Some(answer) = responses.and_then(|mut map| map.remove(INPUT_KEY))
        {
            return Ok(ClientAnswer::Answer(answer));
        }
        let mut requests = InputRequests::new();
        requests.insert(INPUT_KEY.to_owned(), request);
        return Ok(ClientAnswer::Ask(InputRequiredResult::new(
            Some(requests),
            Some(tool.to_owned()),
        )));
    }
    let request = match request {
        InputRequest::CreateMessage(request) => ServerRequest::CreateMessageRequest(request),
        InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
        InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
        other => {
            return Err(ErrorData::internal_error(
                format!("fixture cannot send {other:?}"),
                None,
            ));
        }
    };
    let result: ClientResult = context.peer.send_request(request).await.map_err(|error| {
        ErrorData::internal_error(format!("client request failed: {error}"), None)
    })?;
    let value = serde_json::to_value(result)
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    Ok(ClientAnswer::Answer(value))
}

/// Sampling content is either one block or an array of blocks.
fn sampling_text(answer: &Value) -> Option<String> {
    let content = &answer["content"];
    let block = if content.is_array() {
        &content[0]
    } else {
        content
    };
    block["text"].as_str().map(str::to_owned)
}

fn bad_answer(kind: &str, answer: &Value) -> ErrorData {
    ErrorData::internal_error(format!("unexpected {kind} answer: {answer}"), None)
}

#[tool_router]
impl FixtureServer {
    pub fn new(mode: ProtocolMode) -> Self {
        Self {
            mode,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Return the given text unchanged.")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> CallToolResult {
        text_result(args.text)
    }

    #[tool(description = "Add two integers; the sum is also returned as structuredContent.")]
    async fn add(
        &self,
        Parameters(args): Parameters<AddArgs>,
    ) -> Result<Json<AddOutput>, ErrorData> {
        let sum = args
            .a
            .checked_add(args.b)
            .ok_or_else(|| ErrorData::invalid_params("sum overflows i64", None))?;
        Ok(Json(AddOutput { sum }))
    }

    #[tool(
        description = "Send one notifications/progress per step to the caller's progressToken, then return."
    )]
    async fn progress(
        &self,
        Parameters(args): Parameters<ProgressArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let steps = args.steps.min(MAX_PROGRESS_STEPS);
        if let Some(token) = context.meta.get_progress_token() {
            for step in 1..=steps {
                let notification = ProgressNotificationParam::new(token.clone(), f64::from(step))
                    .with_total(f64::from(steps))
                    .with_message(format!("step {step}/{steps}"));
                context
                    .peer
                    .notify_progress(notification)
                    .await
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                tokio::time::sleep(PROGRESS_STEP_GAP).await;
            }
        }
        Ok(text_result(format!("completed {steps} steps")))
    }

    #[tool(description = "Ask the client to sample a message and return its text.")]
    async fn sample(
        &self,
        Parameters(args): Parameters<SampleArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        MrtrResponses(responses): MrtrResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(args.prompt)], 64);
        let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
        match ask_client(&context, state, responses, request, "sample").await? {
            ClientAnswer::Ask(ask) => Ok(ask.into()),
            ClientAnswer::Answer(answer) => {
                let text = sampling_text(&answer).ok_or_else(|| bad_answer("sampling", &answer))?;
                Ok(text_result(text).into())
            }
        }
    }

    #[tool(
        description = "Ask the user for an answer through elicitation; returns {action, content} as JSON text."
    )]
    async fn elicit(
        &self,
        Parameters(args): Parameters<ElicitArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        MrtrResponses(responses): MrtrResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let schema = serde_json::from_value(json!({
            "type": "object",
            "properties": { "answer": { "type": "string" } },
            "required": ["answer"]
        }))
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: args.message,
            requested_schema: schema,
        };
        let request = InputRequest::Elicitation(ElicitRequest::new(params));
        match ask_client(&context, state, responses, request, "elicit").await? {
            ClientAnswer::Ask(ask) => Ok(ask.into()),
            ClientAnswer::Answer(answer) => {
                let action = answer["action"]
                    .as_str()
                    .ok_or_else(|| bad_answer("elicitation", &answer))?;
                let content = answer.get("content").cloned().unwrap_or(Value::Null);
                let summary = json!({ "action": action, "content": content });
                Ok(text_result(summary.to_string()).into())
            }
        }
    }

    #[tool(description = "List the client's roots; returns {roots} as JSON text.")]
    async fn roots(
        &self,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        MrtrResponses(responses): MrtrResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let request = InputRequest::ListRoots(ListRootsRequest::default());
        match ask_client(&context, state, responses, request, "roots").await? {
            ClientAnswer::Ask(ask) => Ok(ask.into()),
            ClientAnswer::Answer(answer) => {
                let roots = answer
                    .get("roots")
                    .cloned()
                    .ok_or_else(|| bad_answer("roots", &answer))?;
                Ok(text_result(json!({ "roots": roots }).to_string()).into())
            }
        }
    }

    #[tool(description = "Send the message as an info-level notifications/message, then return.")]
    async fn log(
        &self,
        Parameters(args): Parameters<LogArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut notification =
            LoggingMessageNotificationParam::new(LoggingLevel::Info, Value::String(args.message));
        notification.logger = Some(LOGGER.to_owned());
        context
            .peer
            .notify_logging_message(notification)
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        Ok(text_result("logged"))
    }

    #[tool(description = "Sleep for the given number of milliseconds, then return.")]
    async fn slow(
        &self,
        Parameters(args): Parameters<SlowArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let ms = args.ms.min(MAX_SLOW_MS);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => text_result(format!("slept {ms} ms")),
            () = context.ct.cancelled() => CallToolResult::error(vec![ContentBlock::text("cancelled")]),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FixtureServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(FIXTURE_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions("Test fixture for mcp-ui-gateway.")
    }

    fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, ErrorData>> + MaybeSendFuture + '_ {
        let result = match self.mode {
            ProtocolMode::All => Ok(DiscoverResult::from_server_info(
                ProtocolVersion::KNOWN_VERSIONS.to_vec(),
                self.get_info(),
            )),
            ProtocolMode::UpTo2025 => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            )),
        };
        std::future::ready(result)
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = RESOURCES
            .iter()
            .map(|(uri, name, _)| Resource::new(*uri, *name).with_mime_type("text/plain"))
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some((uri, _, text)) = RESOURCES.iter().find(|(uri, _, _)| *uri == request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        };
        let contents = ResourceContents::text(*text, *uri).with_mime_type("text/plain");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Serves one fixture over stdin/stdout until stdin reaches EOF.
pub async fn serve_stdio(mode: ProtocolMode) -> anyhow::Result<()> {
    let running = FixtureServer::new(mode)
        .serve(rmcp::transport::io::stdio_pipes())
        .await?;
    running.waiting().await?;
    Ok(())
}
