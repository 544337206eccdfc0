//! The 2026-07-28 revision for 2025-era upstreams, with real peers (see
//! `tests/peers/README.md`): a client of the new revision must get from a server built
//! before it, through the gateway, what it gets from the same server built after it.
//!
//! - `conformance`: the official conformance suite at 0.2.0-alpha.12 against the gateway
//!   in front of a 2026 build and a 2025 build of the same servers, check by check, and
//!   the Python `mcp` 2.3 client pinned to 2026-07-28 calling the 2025 build of
//!   mcp-server-time.
//! - `discover`: `server/discover` written for every kind of 2025 upstream, its
//!   capabilities matching what answers, and two hosts' replays of it.
//! - `validation`: the requests the revision refuses, with their HTTP status, code and id.
//! - `answers`: answers in the revision's form, otherwise the upstream's bytes.
//! - `listen`: `subscriptions/listen` for every kind of 2025 upstream.
//! - `rounds`: server-to-client requests of a 2025 upstream as `input_required` rounds.
//! - `python`: the Python client of the revision answering those rounds.
//! - `sdk_snippets`: docs/hosts.md's Python and TypeScript clients pinned to the revision,
//!   run as written.
//! - `apps`: the same on an `[[app]]` endpoint of 2025 members (stdio, mcp-server-time,
//!   legacy SSE) under their prefixes: discover, validation, answers, rounds, listen and
//!   the Python client.
//!
//! The 2025 upstreams are `legacy_server.py` under `mcp` 1.30 over stdio, legacy
//! HTTP+SSE and streamable HTTP (with sessions and without), and mcp-server-time
//! 2026.6.4 over stdio ([`Kind`]). Checks are gathered per upstream kind and reported
//! together, so one kind's failure does not hide another's.
//!
//! The peers are installed by `scripts/install-peers.sh` (the 2025-era ones in
//! `tests/peers/.venv/legacy`); when they are missing the tests fail saying so, unless
//! `MCP_UI_SKIP_PEERS=1`. Every process is killed by PID when the test ends; every wait
//! is bounded; the tests take turns with the other real-peer tests.

mod answers;
mod apps;
mod conformance;
mod discover;
mod listen;
mod python;
mod rounds;
mod sdk_snippets;
mod validation;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, StatusCode};
use hyper_util::{client::legacy::Client as HyperClient, rt::TokioExecutor};
use serde_json::{Value, json};
use support::clients::parse_sse;
use support::peers::*;
use support::process::{Proc, Stream};

use crate::support;

/// The revision under test.
const REVISION: &str = "2026-07-28";
/// The `_meta` keys of the revision.
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
/// `serverInfo.name` of `legacy_server.py` and of mcp-server-time.
const LEGACY_NAME: &str = "legacy-test-server";
const TIME_NAME: &str = "mcp-time";
/// Bound on one HTTP exchange with the gateway.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------
// The 2025 upstreams

/// A kind of 2025-era upstream behind the gateway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `legacy_server.py` (mcp 1.30) as a stdio child.
    Stdio,
    /// mcp-server-time 2026.6.4 (mcp 1.30) as a stdio child: tools only.
    Time,
    /// `legacy_server.py --transport sse`: legacy HTTP+SSE.
    Sse,
    /// `legacy_server.py --transport streamable-http`: with `Mcp-Session-Id`.
    Http,
    /// `legacy_server.py --transport streamable-http --stateless`.
    Stateless,
}

impl Kind {
    /// The mount the gateway serves it at (`/<mount>/mcp`).
    fn mount(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Time => "time",
            Kind::Sse => "sse",
            Kind::Http => "http",
            Kind::Stateless => "stateless",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Stdio => "legacy_server.py over stdio",
            Kind::Time => "mcp-server-time 2026.6.4 over stdio",
            Kind::Sse => "legacy_server.py over legacy SSE",
            Kind::Http => "legacy_server.py over streamable HTTP (stateful)",
            Kind::Stateless => "legacy_server.py over streamable HTTP (stateless)",
        }
    }

    /// Its `serverInfo.name`.
    fn server_name(self) -> &'static str {
        match self {
            Kind::Time => TIME_NAME,
            _ => LEGACY_NAME,
        }
    }

    /// `legacy_server.py`'s arguments for a kind it serves over HTTP.
    fn http_args(self) -> Option<&'static [&'static str]> {
        match self {
            Kind::Sse => Some(&["--transport", "sse"]),
            Kind::Http => Some(&["--transport", "streamable-http"]),
            Kind::Stateless => Some(&["--transport", "streamable-http", "--stateless"]),
            Kind::Stdio | Kind::Time => None,
        }
    }
}

/// The `legacy_server.py` processes listening on 127.0.0.1 for the HTTP kinds.
struct Servers {
    running: Vec<(Kind, Proc, String)>,
}

impl Servers {
    /// Starts one `legacy_server.py` (mcp 1.30) per HTTP kind among `kinds`.
    async fn start(peers: &Peers, kinds: &[Kind]) -> Servers {
        let script = peers.script("legacy_server.py");
        let mut running = Vec::new();
        for kind in kinds {
            let Some(args) = kind.http_args() else {
                continue;
            };
            let mut cmd = Command::new(&peers.legacy_python);
            cmd.arg(&script).args(args).current_dir(&peers.root);
            let mut proc = Proc::spawn(format!("legacy_server.py ({})", kind.label()), &mut cmd);
            let url = proc
                .wait_for_async("the READY line on stdout", READY_LIMIT, |s, l| {
                    (s == Stream::Stdout)
                        .then(|| l.strip_prefix("READY ").map(str::to_owned))
                        .flatten()
                })
                .await;
            running.push((*kind, proc, url));
        }
        Servers { running }
    }

    fn get(&self, kind: Kind) -> Option<&(Kind, Proc, String)> {
        self.running.iter().find(|(k, _, _)| *k == kind)
    }

    /// The process serving `kind`, for what it wrote on stderr.
    fn proc(&self, kind: Kind) -> Option<&Proc> {
        self.get(kind).map(|(_, p, _)| p)
    }

    /// `[[upstream]]` for `kind` mounted as `mount`, with `extra` lines (its keys).
    fn table(&self, peers: &Peers, kind: Kind, mount: &str, extra: &str) -> String {
        let name = Value::from(mount);
        let how = match kind {
            Kind::Stdio | Kind::Time => {
                let args: Vec<String> = match kind {
                    Kind::Stdio => vec![peers.script("legacy_server.py").display().to_string()],
                    _ => vec!["-m".into(), "mcp_server_time".into()],
                };
                format!(
                    "command = {}\nargs = {}",
                    Value::from(peers.legacy_python.display().to_string()),
                    Value::from(args)
                )
            }
            Kind::Sse => format!("sse_url = {}", Value::from(self.url(kind))),
            Kind::Http | Kind::Stateless => format!("url = {}", Value::from(self.url(kind))),
        };
        format!("[[upstream]]\nname = {name}\n{how}\n{extra}\n")
    }

    fn url(&self, kind: Kind) -> String {
        self.get(kind)
            .unwrap_or_else(|| panic!("no server was started for {kind:?}"))
            .2
            .clone()
    }
}

/// `[[upstream]]` for a stdio server run as `command`.
fn stdio_upstream(name: &str, command: &[String]) -> String {
    format!(
        "[[upstream]]\nname = {}\ncommand = {}\nargs = {}\n",
        Value::from(name),
        Value::from(command[0].as_str()),
        Value::from(command[1..].to_vec())
    )
}

/// The gateway binary in front of a configuration of its own.
struct Front {
    gateway: Gateway,
    /// `http://127.0.0.1:PORT`.
    base: String,
    _config: tempfile::TempDir,
}

impl Front {
    /// A gateway whose configuration is `overlays` (the directory, or none) and then
    /// `tables` (`[limits]`, `[[upstream]]`…).
    async fn start(peers: &Peers, label: &str, overlays: Option<&Path>, tables: &str) -> Front {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gateway.toml");
        let overlays = overlays.map_or("/nonexistent".into(), |d| d.display().to_string());
        std::fs::write(
            &file,
            format!("overlays = {}\n{tables}", Value::from(overlays)),
        )
        .unwrap();
        // The revision's refusals and rounds said in the log a failure shows.
        let log: &[(&str, &str)] = match std::env::var_os("RUST_LOG") {
            Some(_) => &[],
            None => &[("RUST_LOG", "info,mcp_ui_proxy::relay=debug")],
        };
        let gateway = Gateway::start_with(
            peers,
            label,
            Upstream::Configured,
            &["--config", file.to_str().unwrap()],
            log,
        )
        .await;
        let after_scheme = gateway.url.find("://").unwrap() + 3;
        let end = gateway.url[after_scheme..].find('/').unwrap() + after_scheme;
        let base = gateway.url[..end].to_owned();
        Front {
            gateway,
            base,
            _config: dir,
        }
    }

    /// The gateway in front of each of `kinds` at its own mount ([`Kind::mount`]), with
    /// `limits` (tables such as `[limits]`) before the mounts.
    async fn of(
        peers: &Peers,
        servers: &Servers,
        kinds: &[Kind],
        overlays: Option<&Path>,
        limits: &str,
    ) -> Front {
        let tables: String = kinds
            .iter()
            .map(|k| servers.table(peers, *k, k.mount(), ""))
            .collect();
        let label = kinds
            .iter()
            .map(|k| k.mount())
            .collect::<Vec<_>>()
            .join(", ");
        Front::start(peers, &label, overlays, &format!("{limits}\n{tables}")).await
    }

    fn url(&self, kind: Kind) -> String {
        self.url_of(kind.mount())
    }

    fn url_of(&self, mount: &str) -> String {
        format!("{}/{mount}/mcp", self.base)
    }

    /// The end of the gateway's log, without what its stdio children wrote (but
    /// `legacy_server.py`'s own notes): the upstreams' tracebacks drown it.
    fn tail(&self) -> String {
        let stderr = self.gateway.proc.stderr();
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.contains("upstream::stderr") || l.contains("legacy_server: "))
            .collect();
        let tail = lines[lines.len().saturating_sub(40)..]
            .iter()
            .map(|l| format!("    {}", support::process::truncate(l, 800)))
            .collect::<Vec<_>>()
            .join("\n");
        format!(
            "  --- {} (pid {}), the last 40 lines of its log:\n{tail}",
            self.gateway.proc.name, self.gateway.proc.pid
        )
    }
}

// ---------------------------------------------------------------------------------------
// Requests of the revision

/// Every capability a client can declare.
fn all_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

/// The `_meta` every request of the revision carries.
fn meta(caps: Value) -> Value {
    json!({
        META_VERSION: REVISION,
        META_CLIENT_INFO: {"name": "revision-test", "version": "1.0.0"},
        META_CAPABILITIES: caps,
    })
}

/// A request of the revision: `params` (an object) with the `_meta` declaring `caps`.
fn request(id: impl Into<Value>, method: &str, params: Value, caps: Value) -> Value {
    let mut params = params;
    params["_meta"] = meta(caps);
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// The headers a client of the revision sends with `body`: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` for the methods that name something.
fn revision_headers(body: &Value) -> Vec<(&'static str, String)> {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut h = vec![
        ("mcp-protocol-version", REVISION.to_owned()),
        ("mcp-method", method.clone()),
    ];
    let named = match method.as_str() {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(name) = named {
        h.push(("mcp-name", name.to_owned()));
    }
    h
}

/// A JSON-RPC answer as the gateway gave it.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    /// The JSON-RPC response (the last one of an SSE answer).
    body: Value,
    /// Its bytes as sent (the SSE event's data for an SSE answer).
    raw: String,
}

impl Answer {
    fn code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }

    /// `Err` saying what this is when it is not a 200 result.
    fn ok(&self) -> Result<&Value, String> {
        match self.status == StatusCode::OK && self.body["result"].is_object() {
            true => Ok(&self.body["result"]),
            false => Err(self.to_string()),
        }
    }

    /// The `result` member exactly as the gateway wrote it.
    fn raw_result(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct R {
            result: Box<serde_json::value::RawValue>,
        }
        serde_json::from_str::<R>(&self.raw)
            .ok()
            .map(|r| r.result.get().to_owned())
    }

    /// `Err` saying what differs from the refusal `(status, code)` carrying `id`.
    fn refused(&self, status: u16, code: i64, id: &Value) -> Result<&Value, String> {
        let error = &self.body["error"];
        if self.status.as_u16() == status && self.code() == Some(code) && self.body["id"] == *id {
            return Ok(error);
        }
        Err(format!(
            "expected HTTP {status} with error {code} and id {id}, got {self}"
        ))
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let raw = support::process::truncate(&self.raw, 600);
        write!(f, "HTTP {} {raw}", self.status.as_u16())
    }
}

/// POSTs `body` with `headers` (plus the JSON content type and the accepted media types
/// unless given) and reads the whole answer, JSON or SSE, within [`EXCHANGE_LIMIT`]:
/// `Err` says what went wrong instead of panicking, so that one upstream kind's
/// failure is reported with the others'.
async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Result<Answer, String> {
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut builder = Request::post(url);
    if !has("content-type") {
        builder = builder.header("content-type", "application/json");
    }
    if !has("accept") {
        builder = builder.header("accept", "application/json, text/event-stream");
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())?;
    let client = HyperClient::builder(TokioExecutor::new()).build_http();
    let exchange = async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok::<_, String>((parts, bytes))
    };
    let what = format!("{} to {url}", body["method"]);
    let (parts, bytes) = tokio::time::timeout(EXCHANGE_LIMIT, exchange)
        .await
        .map_err(|_| format!("{what}: no whole answer within {EXCHANGE_LIMIT:?}"))?
        .map_err(|e| format!("{what}: {e}"))?;
    let sse = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let raw = match sse {
        true => parse_sse(&bytes)
            .into_iter()
            .rev()
            .find(|e| {
                e.json()
                    .is_ok_and(|m| m.get("id").is_some() && m.get("method").is_none())
            })
            .map(|e| e.data)
            .ok_or_else(|| {
                format!(
                    "{what}: HTTP {} SSE without a response: {}",
                    parts.status,
                    String::from_utf8_lossy(&bytes)
                )
            })?,
        false => String::from_utf8_lossy(&bytes).into_owned(),
    };
    let body = serde_json::from_str(&raw).map_err(|e| {
        format!(
            "{what}: HTTP {} answer is not JSON ({e}): {raw}",
            parts.status
        )
    })?;
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
        raw,
    })
}

/// A request of the revision as its clients send it (the revision's headers).
async fn ask(url: &str, body: &Value) -> Result<Answer, String> {
    let headers = revision_headers(body);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    post(url, &headers, body).await
}

/// `method` with `params` under every capability, as its clients send it.
async fn ask_method(url: &str, id: u64, method: &str, params: Value) -> Result<Answer, String> {
    ask(url, &request(id, method, params, all_caps())).await
}

// ---------------------------------------------------------------------------------------
// What the checks found

/// The failures found so far, each with the upstream kind or step it concerns.
#[derive(Default)]
struct Findings(Vec<String>);

impl Findings {
    /// Notes `Err`'s text under `what`; gives back `Ok`'s value.
    fn note<T>(&mut self, what: impl std::fmt::Display, r: Result<T, String>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.push(format!("{what}: {e}"));
                None
            }
        }
    }

    /// Notes `what` unless `ok`.
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    /// Panics listing every failure (and the gateway's log) unless there were none.
    fn assert_none(self, front: &Front, what: &str) {
        assert!(
            self.0.is_empty(),
            "{what}: {} failure(s):\n  - {}\n{}",
            self.0.len(),
            self.0.join("\n  - "),
            front.tail()
        );
    }
}

/// Waits (bounded by `limit`) until `check()` holds; whether it did.
async fn eventually(limit: Duration, check: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
