//! Hot reload of overlays, in-process (`TestGateway` with the directory watcher the
//! binary starts, `Live::watch`), on a temporary copy of `overlays/`, in front of the
//! bundled demo as a stdio child and as a streamable HTTP server
//! (`mcp_ui_gateway::demo::serve_http`):
//!
//! - a good edit is applied (`tools/list` changes) and `notifications/tools/list_changed`
//!   arrives on an open GET stream;
//! - bad edits (invalid TOML, an over-long `invoking` text, an unknown widget, an unknown
//!   key) keep the last good snapshot: `tools/list` is unchanged, nothing is announced,
//!   and the reload error names the file and the reason; a later good edit still applies;
//! - under load: 4 clients, each with its own session, loop `tools/list` + `tools/call`
//!   for 3 s while the overlay file is rewritten every 100 ms, alternating good (two
//!   variants) and bad. No request fails, and every `tools/list` is exactly one of the
//!   two good variants, never a mix.
//!
//! The watcher debounces for 200 ms, so at one write per 100 ms it would only reload
//! once the writes stop. The load test therefore also calls `Live::reload` (what the
//! watcher calls) right after each write, so that snapshots really swap under load
//! (about 15 times in 3 s); the watcher runs as well and applies the last write. Files
//! are replaced atomically (written beside, renamed over), as editors save.
//!
//! Only 127.0.0.1; every request and wait is bounded; stdio children end with the
//! gateway (kill on drop).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::{Client as HyperClient, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use mcp_ui_proxy::live::Reloaded;
use serde_json::{Value, json};
use support::clients::{SseReader, open_sse, parse_sse};
use support::gateway::{self as gw, TestGateway};
use support::process::copy_dir;
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::support;

const PROTOCOL: &str = "2025-11-25";
/// One HTTP exchange.
const REQUEST_LIMIT: Duration = Duration::from_secs(10);
/// A reload to be applied and announced (debounce is 200 ms).
const APPLY_LIMIT: Duration = Duration::from_secs(10);
/// Long enough for the watcher to have seen and refused a bad edit.
const SETTLE: Duration = Duration::from_millis(800);
/// The load phase.
const LOAD_FOR: Duration = Duration::from_secs(3);
const LOAD_CLIENTS: usize = 4;
const REWRITE_EVERY: Duration = Duration::from_millis(100);
/// Iteration cap per client (each iteration is a tools/list and a tools/call).
const MAX_ITERATIONS: usize = 5_000;
/// The whole load test.
const LOAD_TEST_LIMIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// Overlay files

/// A temporary copy of the repository's `overlays/`.
fn copy_overlays() -> tempfile::TempDir {
    let tmp = tempfile::Builder::new()
        .prefix("mcp-ui-gateway-reload-")
        .tempdir()
        .expect("temp dir");
    let dest = tmp.path().join("overlays");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays"),
        &dest,
    );
    tmp
}

/// A complete, valid overlay for the demo whose every text names `tag`.
fn good_overlay(tag: &str) -> String {
    let tool = |name: &str, verb: &str, readonly: bool| {
        format!(
            r#"
[tools.{name}]
widget = "task-board"
title = "{tag}: {verb}"
description = "{tag} variant of {name}."
invoking = "{tag}: {verb}…"
invoked = "{tag}: done"
annotations = {{ readOnlyHint = {readonly}, openWorldHint = false }}
result = {{ structured_from_text = true }}
"#
        )
    };
    format!(
        "# reload test variant {tag}\n{}{}{}",
        tool("list_tasks", "listing", true),
        tool("add_task", "adding", false),
        tool("complete_task", "completing", false)
    )
}

/// `invoking` two characters over ChatGPT's 64.
const LONG_INVOKING: &str = "Loading every task on the board, one at a time, please wait a bit…";

/// Overlays the gateway must refuse, with a word the reload error must contain.
fn bad_overlays() -> Vec<(&'static str, String, &'static str)> {
    assert_eq!(LONG_INVOKING.chars().count(), 66);
    vec![
        (
            "invalid TOML",
            "[tools.list_tasks\nwidget = \"task-board\"\ntitle = \"Broken\"\n".to_owned(),
            "demo.toml",
        ),
        (
            "over-long invoking text",
            good_overlay("Long").replace(
                "invoking = \"Long: listing…\"",
                &format!("invoking = \"{LONG_INVOKING}\""),
            ),
            "invoking",
        ),
        (
            "unknown widget",
            good_overlay("Missing")
                .replace("widget = \"task-board\"", "widget = \"no-such-widget\""),
            "no-such-widget",
        ),
        (
            "unknown key",
            good_overlay("Typo").replace("invoked = \"Typo: done\"", "invokd = \"Typo: done\""),
            "invokd",
        ),
    ]
}

/// Replaces `demo.toml` atomically, as most editors save (a dot file, which the gateway
/// ignores, renamed over it). An in-place rewrite truncates the file first: a reload
/// that happens to read it at that instant sees an empty, valid overlay (no UI at all)
/// and applies it, which is not what these tests are about.
fn write_overlay(dir: &Path, text: &str) {
    let file = dir.join("demo.toml");
    let temp = dir.join(".demo.toml.saving");
    std::fs::write(&temp, text).unwrap_or_else(|e| panic!("write {}: {e}", temp.display()));
    std::fs::rename(&temp, &file).unwrap_or_else(|e| panic!("rename to {}: {e}", file.display()));
}

// ---------------------------------------------------------------------------------------
// The gateway and its upstream

#[derive(Clone, Copy, Debug)]
enum Upstream {
    Stdio,
    Http,
}

struct Setup {
    gateway: TestGateway,
    /// `overlays/` inside `_tmp`.
    dir: PathBuf,
    url: String,
    _tmp: tempfile::TempDir,
    /// Stops the watcher and the HTTP demo (also on panic).
    _stop: DropGuard,
}

async fn setup(upstream: Upstream) -> Setup {
    let tmp = copy_overlays();
    let dir = tmp.path().join("overlays");
    let stop = CancellationToken::new();
    let upstream_config = match upstream {
        Upstream::Stdio => gw::demo_stdio("demo"),
        Upstream::Http => {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            tokio::spawn(mcp_ui_gateway::demo::serve_http(
                listener,
                stop.child_token(),
            ));
            gw::http(
                "demo",
                &format!("http://{addr}{}", mcp_ui_gateway::demo::HTTP_PATH),
            )
        }
    };
    let mut config = gw::test_config();
    config.upstreams = vec![upstream_config];
    config.overlays = dir.clone();
    let gateway = TestGateway::start_with(config).await;
    gateway
        .gateway
        .live
        .watch(stop.child_token())
        .expect("watch the overlay directory");
    let url = gateway.url();
    Setup {
        gateway,
        dir,
        url,
        _tmp: tmp,
        _stop: stop.drop_guard(),
    }
}

// ---------------------------------------------------------------------------------------
// A raw client that reports failures instead of panicking

type Http = HyperClient<HttpConnector, Full<Bytes>>;

fn http_client() -> Http {
    HyperClient::builder(TokioExecutor::new()).build_http()
}

struct Session {
    http: Http,
    url: String,
    headers: Vec<(String, String)>,
    next_id: u64,
}

/// A JSON-RPC answer and the other messages that came on its stream.
struct Answer {
    result: Value,
    others: Vec<Value>,
}

impl Session {
    async fn open(url: &str) -> Result<Session, String> {
        let mut session = Session {
            http: http_client(),
            url: url.to_owned(),
            headers: Vec::new(),
            next_id: 1,
        };
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": { "name": "reload-test", "version": "0" }
            }
        });
        let (status, headers, body) = session.post(init.to_string()).await?;
        if status != StatusCode::OK {
            return Err(format!(
                "initialize: {status} {}",
                String::from_utf8_lossy(&body)
            ));
        }
        let sid = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("initialize answered without mcp-session-id")?
            .to_owned();
        session.headers = vec![
            ("mcp-session-id".into(), sid),
            ("mcp-protocol-version".into(), PROTOCOL.into()),
        ];
        let (status, _, body) = session
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into())
            .await?;
        if status != StatusCode::ACCEPTED {
            return Err(format!(
                "notifications/initialized: {status} {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(session)
    }

    async fn post(&self, body: String) -> Result<(StatusCode, hyper::HeaderMap, Bytes), String> {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| format!("HTTP: {e}"))?;
            let (parts, body) = response.into_parts();
            let bytes = body
                .collect()
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            Ok((parts.status, parts.headers, bytes))
        };
        tokio::time::timeout(REQUEST_LIMIT, exchange)
            .await
            .map_err(|_| format!("no complete answer within {REQUEST_LIMIT:?}"))?
    }

    /// Sends a request; its `result` (a JSON-RPC error is a failure).
    async fn request(&mut self, method: &str, params: Value) -> Result<Answer, String> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let (status, headers, body) = self.post(message.to_string()).await?;
        let text = || String::from_utf8_lossy(&body).into_owned();
        if status != StatusCode::OK {
            return Err(format!("{method}: HTTP {status}: {}", text()));
        }
        let is_sse = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let messages: Vec<Value> = if is_sse {
            parse_sse(&body)
                .iter()
                .filter(|e| !e.data.is_empty())
                .map(|e| e.json().map_err(|e| format!("{method}: {e}")))
                .collect::<Result<_, _>>()?
        } else {
            vec![serde_json::from_slice(&body).map_err(|e| format!("{method}: {e}: {}", text()))?]
        };
        let (replies, others): (Vec<Value>, Vec<Value>) = messages
            .into_iter()
            .partition(|m| m["id"] == json!(id) && m.get("method").is_none());
        let reply = replies
            .into_iter()
            .next()
            .ok_or_else(|| format!("{method}: no response with id {id} in {}", text()))?;
        if let Some(error) = reply.get("error") {
            return Err(format!("{method}: JSON-RPC error {error}"));
        }
        Ok(Answer {
            result: reply["result"].clone(),
            others,
        })
    }

    /// `tools/list` as name → tool (upstream order is not part of the comparison).
    async fn tools(&mut self) -> Result<(BTreeMap<String, Value>, Vec<Value>), String> {
        let answer = self.request("tools/list", json!({})).await?;
        let tools = answer.result["tools"]
            .as_array()
            .ok_or_else(|| format!("tools/list without tools: {}", answer.result))?;
        let by_name = tools
            .iter()
            .map(|t| (t["name"].as_str().unwrap_or_default().to_owned(), t.clone()))
            .collect();
        Ok((by_name, answer.others))
    }

    /// `tools/call list_tasks`; the shaped result must carry the task list.
    async fn list_tasks(&mut self) -> Result<Vec<Value>, String> {
        let answer = self
            .request(
                "tools/call",
                json!({ "name": "list_tasks", "arguments": {} }),
            )
            .await?;
        let result = &answer.result;
        if result["isError"] == json!(true) {
            return Err(format!("list_tasks: isError: {result}"));
        }
        if !result["structuredContent"]["tasks"].is_array() {
            return Err(format!("list_tasks: no structuredContent.tasks: {result}"));
        }
        Ok(answer.others)
    }

    /// Opens the session's GET stream.
    async fn get_stream(&self) -> SseReader {
        let mut headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        headers.push(("accept", "text/event-stream"));
        let (status, response_headers, reader) = open_sse(Method::GET, &self.url, &headers, "")
            .await
            .expect("open the GET stream");
        assert_eq!(status, StatusCode::OK, "GET stream");
        assert!(
            response_headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream")),
            "GET stream content type: {response_headers:?}"
        );
        reader
    }
}

fn is_tools_list_changed(message: &Value) -> bool {
    message["method"] == "notifications/tools/list_changed"
}

/// Methods of the JSON messages on `reader` until one is `tools/list_changed`, or an error
/// after `limit`.
async fn wait_list_changed(reader: &mut SseReader, limit: Duration) -> Result<Vec<String>, String> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let event = reader
            .next_event(left)
            .await
            .map_err(|e| format!("{e:#}; saw {seen:?}"))?
            .ok_or_else(|| format!("the GET stream ended; saw {seen:?}"))?;
        let Ok(message) = event.json() else {
            continue; // priming events carry no data
        };
        seen.push(
            message["method"]
                .as_str()
                .unwrap_or("(response)")
                .to_owned(),
        );
        if is_tools_list_changed(&message) {
            return Ok(seen);
        }
    }
}

/// Every JSON message that arrives on `reader` within `window`.
async fn messages_within(reader: &mut SseReader, window: Duration) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + window;
    let mut out = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return out;
        }
        match reader.next_event(left).await {
            Ok(Some(event)) => out.extend(event.json().ok()),
            Ok(None) | Err(_) => return out,
        }
    }
}

fn titles(tools: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    tools
        .iter()
        .map(|(name, t)| (name.clone(), t["title"].as_str().unwrap_or("").to_owned()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Good and bad edits

async fn good_and_bad_edits(upstream: Upstream) {
    let started = Instant::now();
    let s = setup(upstream).await;
    let live = s.gateway.gateway.live.clone();
    let mut session = Session::open(&s.url).await.expect("session");
    let mut stream = session.get_stream().await;
    let (before, _) = session.tools().await.expect("tools/list");
    // The repository's overlays: the render tool `show_tasks` (gateway-owned) and
    // `add_task` render the task board; the data tool `list_tasks` does not.
    let widget_uri = before["add_task"]["_meta"]["ui"]["resourceUri"].clone();
    assert!(
        widget_uri
            .as_str()
            .is_some_and(|u| u.starts_with("ui://task-board/")),
        "{upstream:?}: the copied overlays are in force: {:?}",
        before["add_task"]
    );
    assert_eq!(
        before["show_tasks"]["_meta"]["ui"]["resourceUri"], widget_uri,
        "{upstream:?}: the render tool is listed: {before:?}"
    );
    assert!(before["list_tasks"]["_meta"]["ui"]["resourceUri"].is_null());

    // A good edit: applied and announced on the open GET stream.
    let generation = live.generation();
    write_overlay(&s.dir, &good_overlay("A"));
    let seen = wait_list_changed(&mut stream, APPLY_LIMIT)
        .await
        .unwrap_or_else(|e| {
            panic!("{upstream:?}: no tools/list_changed on the GET stream after a good edit: {e}")
        });
    let announced = started.elapsed();
    assert!(
        live.generation() > generation,
        "{upstream:?}: a new snapshot"
    );
    let (after, _) = session.tools().await.expect("tools/list");
    assert_eq!(
        titles(&after),
        BTreeMap::from([
            ("add_task".to_owned(), "A: adding".to_owned()),
            ("complete_task".to_owned(), "A: completing".to_owned()),
            ("list_tasks".to_owned(), "A: listing".to_owned()),
            // Not overlaid by the variant: the upstream's (no title). The render tool
            // `show_tasks` of the repository's overlays is gone with them.
            ("refresh_tasks".to_owned(), String::new()),
        ]),
        "{upstream:?}: the edit is applied"
    );
    let list_tasks = &after["list_tasks"];
    assert_eq!(list_tasks["description"], "A variant of list_tasks.");
    assert_eq!(
        list_tasks["_meta"]["openai/toolInvocation/invoking"],
        "A: listing…"
    );
    assert_eq!(list_tasks["_meta"]["ui"]["resourceUri"], widget_uri);
    session
        .list_tasks()
        .await
        .expect("tools/call after the edit");
    // Both lists are announced (the widget set may have changed too).
    let rest = messages_within(&mut stream, Duration::from_millis(300)).await;
    let mut methods = seen.clone();
    methods.extend(
        rest.iter()
            .filter_map(|m| m["method"].as_str().map(str::to_owned)),
    );
    assert!(
        methods
            .iter()
            .any(|m| m == "notifications/resources/list_changed"),
        "{upstream:?}: resources/list_changed announced too: {methods:?}"
    );

    // Bad edits: refused, the last good snapshot stays, nothing is announced.
    let good = live.load();
    let good_generation = live.generation();
    for (what, text, needle) in bad_overlays() {
        write_overlay(&s.dir, &text);
        let heard = messages_within(&mut stream, SETTLE).await;
        assert!(
            !heard.iter().any(is_tools_list_changed),
            "{upstream:?}: a bad edit ({what}) was announced: {heard:?}"
        );
        assert_eq!(
            live.generation(),
            good_generation,
            "{upstream:?}: a bad edit ({what}) replaced the snapshot"
        );
        assert!(
            Arc::ptr_eq(&good, &live.load()),
            "{upstream:?}: {what}: snapshot swapped"
        );
        let (now, _) = session.tools().await.expect("tools/list");
        assert_eq!(
            now, after,
            "{upstream:?}: after a bad edit ({what}) tools/list must be the last good one"
        );
        session
            .list_tasks()
            .await
            .unwrap_or_else(|e| panic!("{upstream:?}: tools/call after a bad edit ({what}): {e}"));
        // What the watcher logged: the same reload, called directly.
        let error = match live.reload() {
            Err(errors) => errors.to_string(),
            Ok(reloaded) => panic!("{upstream:?}: {what} was accepted: {reloaded:?}"),
        };
        assert!(
            error.contains("demo.toml") && error.contains(needle),
            "{upstream:?}: the reload error for {what} names the file and the problem \
             ({needle:?}): {error}"
        );
        if what == "over-long invoking text" {
            assert!(
                error.contains("66 characters") && error.contains("64"),
                "{error}"
            );
        }
    }

    // A good edit after the bad ones is applied again.
    write_overlay(&s.dir, &good_overlay("B"));
    wait_list_changed(&mut stream, APPLY_LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{upstream:?}: no tools/list_changed after recovering: {e}"));
    let (recovered, _) = session.tools().await.expect("tools/list");
    assert_eq!(recovered["list_tasks"]["title"], "B: listing");
    assert_eq!(live.reload().ok(), Some(Reloaded::Unchanged));

    s.gateway.shutdown().await;
    eprintln!(
        "{upstream:?}: good edit announced after {:.2} s; whole test {:.2} s",
        announced.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_upstream_good_edit_applies_and_is_announced_bad_edits_keep_the_last_good() {
    tokio::time::timeout(Duration::from_secs(60), good_and_bad_edits(Upstream::Stdio))
        .await
        .expect("the test finishes within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_upstream_good_edit_applies_and_is_announced_bad_edits_keep_the_last_good() {
    tokio::time::timeout(Duration::from_secs(60), good_and_bad_edits(Upstream::Http))
        .await
        .expect("the test finishes within 60 s");
}

// ---------------------------------------------------------------------------------------
// Under load

#[derive(Default, Debug)]
struct Tally {
    lists: usize,
    lists_a: usize,
    lists_b: usize,
    calls: usize,
    announced: usize,
    failures: Vec<String>,
    mixes: Vec<String>,
}

fn describe_mix(got: &BTreeMap<String, Value>, a: &BTreeMap<String, Value>) -> String {
    let summary = |tools: &BTreeMap<String, Value>| {
        tools
            .iter()
            .map(|(n, t)| {
                format!(
                    "{n}: title {}, invoking {}",
                    t["title"], t["_meta"]["openai/toolInvocation/invoking"]
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!("got [{}], variant A is [{}]", summary(got), summary(a))
}

async fn client_loop(
    url: String,
    a: Arc<BTreeMap<String, Value>>,
    b: Arc<BTreeMap<String, Value>>,
    until: tokio::time::Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut session = match Session::open(&url).await {
        Ok(s) => s,
        Err(e) => {
            tally.failures.push(format!("open: {e}"));
            return tally;
        }
    };
    for _ in 0..MAX_ITERATIONS {
        if tokio::time::Instant::now() >= until {
            break;
        }
        match session.tools().await {
            Ok((tools, others)) => {
                tally.lists += 1;
                tally.announced += others.iter().filter(|m| is_tools_list_changed(m)).count();
                if tools == *a {
                    tally.lists_a += 1;
                } else if tools == *b {
                    tally.lists_b += 1;
                } else if tally.mixes.len() < 5 {
                    tally.mixes.push(describe_mix(&tools, &a));
                } else {
                    tally.mixes.push(String::new());
                }
            }
            Err(e) => tally.failures.push(e),
        }
        match session.list_tasks().await {
            Ok(others) => {
                tally.calls += 1;
                tally.announced += others.iter().filter(|m| is_tools_list_changed(m)).count();
            }
            Err(e) => tally.failures.push(e),
        }
    }
    tally
}

async fn under_load(upstream: Upstream) {
    let started = Instant::now();
    let s = setup(upstream).await;
    let live = s.gateway.gateway.live.clone();

    // The two good variants, as tools/list shows them.
    let mut probe = Session::open(&s.url).await.expect("session");
    let mut variants = Vec::new();
    for tag in ["A", "B"] {
        write_overlay(&s.dir, &good_overlay(tag));
        assert!(
            matches!(live.reload(), Ok(Reloaded::Changed(_))),
            "{upstream:?}: variant {tag} loads"
        );
        let (tools, _) = probe.tools().await.expect("tools/list");
        // The demo's four tools; the variants declare no render tool.
        assert_eq!(tools.len(), 4, "{upstream:?}: {tools:?}");
        assert_eq!(tools["list_tasks"]["title"], format!("{tag}: listing"));
        variants.push(Arc::new(tools));
    }
    let (a, b) = (variants[0].clone(), variants[1].clone());
    assert_ne!(a, b);
    let bad = bad_overlays();
    let mut stream = probe.get_stream().await;

    // Load, while the file is rewritten and reloaded.
    let until = tokio::time::Instant::now() + LOAD_FOR;
    let clients: Vec<_> = (0..LOAD_CLIENTS)
        .map(|_| tokio::spawn(client_loop(s.url.clone(), a.clone(), b.clone(), until)))
        .collect();
    let stream_announcements = Arc::new(AtomicUsize::new(0));
    let reader = {
        let counter = stream_announcements.clone();
        tokio::spawn(async move {
            loop {
                let left = until
                    .saturating_duration_since(tokio::time::Instant::now())
                    .saturating_add(Duration::from_millis(500));
                match stream.next_event(left).await {
                    Ok(Some(event)) => {
                        if event.json().is_ok_and(|m| is_tools_list_changed(&m)) {
                            counter.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    _ => return stream,
                }
            }
        })
    };
    let generation_before = live.generation();
    let (mut changed, mut refused, mut unchanged) = (0, 0, 0);
    let mut writes = 0usize;
    let mut last_good = "B"; // in force since the variants were captured
    let mut tick = tokio::time::interval(REWRITE_EVERY);
    while tokio::time::Instant::now() < until {
        tick.tick().await;
        // good A, bad, good B, bad, …: every good write flips the variant.
        let text = match writes % 4 {
            0 => {
                last_good = "A";
                good_overlay("A")
            }
            2 => {
                last_good = "B";
                good_overlay("B")
            }
            _ => bad[(writes / 2) % bad.len()].1.clone(),
        };
        write_overlay(&s.dir, &text);
        writes += 1;
        match live.reload() {
            Ok(Reloaded::Changed(_)) => changed += 1,
            Ok(Reloaded::Unchanged) => unchanged += 1,
            Err(_) => refused += 1,
        }
    }
    let mut total = Tally::default();
    for client in clients {
        let tally = tokio::time::timeout(LOAD_FOR + REQUEST_LIMIT * 2, client)
            .await
            .expect("a load client finishes")
            .expect("a load client does not panic");
        assert!(
            tally.lists >= 5,
            "{upstream:?}: a client did only {} tools/list in {LOAD_FOR:?}: {tally:?}",
            tally.lists
        );
        total.lists += tally.lists;
        total.lists_a += tally.lists_a;
        total.lists_b += tally.lists_b;
        total.calls += tally.calls;
        total.announced += tally.announced;
        total.failures.extend(tally.failures);
        total.mixes.extend(tally.mixes);
    }
    let _stream = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("the GET stream reader stops")
        .expect("the GET stream reader does not panic");
    let on_stream = stream_announcements.load(Ordering::Relaxed);

    // Swaps the watcher made during the writes, besides the test's own reloads.
    let extra_swaps = (live.generation() - generation_before).saturating_sub(changed as u64);
    assert!(
        total.failures.is_empty() && total.mixes.is_empty(),
        "{upstream:?}: {} of {} requests failed and {} of {} tools/list were neither \
         variant during reloads ({changed} swaps by the test, {extra_swaps} by the \
         watcher); first failures: {:?}; first mixes: {:?}",
        total.failures.len(),
        total.lists + total.calls + total.failures.len(),
        total.mixes.len(),
        total.lists,
        &total.failures[..total.failures.len().min(5)],
        total
            .mixes
            .iter()
            .filter(|m| !m.is_empty())
            .collect::<Vec<_>>()
    );
    assert!(
        changed >= 10 && refused >= 10,
        "{upstream:?}: the snapshot swapped {changed} times and refused {refused} bad \
         edits out of {writes} writes ({unchanged} unchanged)"
    );
    assert!(
        total.lists_a > 0 && total.lists_b > 0,
        "{upstream:?}: the clients saw both variants (A {}, B {})",
        total.lists_a,
        total.lists_b
    );
    assert!(
        on_stream > 0,
        "{upstream:?}: the open GET stream heard no tools/list_changed during {changed} swaps"
    );

    // The watcher applies the last write once the writes stop (a good one or a bad one;
    // either way the snapshot in force is the last good variant).
    tokio::time::sleep(SETTLE).await;
    let (after, _) = probe.tools().await.expect("tools/list after the load");
    assert_eq!(
        after["list_tasks"]["title"],
        format!("{last_good}: listing"),
        "{upstream:?}: the last good write is in force"
    );
    s.gateway.shutdown().await;
    eprintln!(
        "{upstream:?} under load: {} tools/list (A {}, B {}) + {} tools/call by {LOAD_CLIENTS} \
         clients in {LOAD_FOR:?}; {writes} writes: {changed} swaps, {refused} refused, \
         {unchanged} unchanged, {extra_swaps} by the watcher; tools/list_changed: {on_stream} on the GET stream, {} on \
         request streams; whole test {:.2} s",
        total.lists,
        total.lists_a,
        total.lists_b,
        total.calls,
        total.announced,
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stdio_upstream_no_request_fails_and_no_list_is_mixed_while_overlays_reload() {
    tokio::time::timeout(LOAD_TEST_LIMIT, under_load(Upstream::Stdio))
        .await
        .expect("the load test finishes within its limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_upstream_no_request_fails_and_no_list_is_mixed_while_overlays_reload() {
    tokio::time::timeout(LOAD_TEST_LIMIT, under_load(Upstream::Http))
        .await
        .expect("the load test finishes within its limit");
}

/// Files written beside the overlay directory (a log, say) do not reload the
/// overlays: only the directory itself and what is inside it count.
#[tokio::test]
async fn writes_beside_the_overlay_directory_do_not_reload() {
    let setup = setup(Upstream::Stdio).await;
    let live = &setup.gateway.gateway.live;
    let beside = setup.dir.parent().unwrap().join("gateway.log");
    // Let any event of the setup itself settle first.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = live.reload_counts();
    for i in 0..10 {
        std::fs::write(&beside, format!("line {i}\n")).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        live.reload_counts(),
        before,
        "a write beside the directory reloaded"
    );
    // A write inside still does.
    let demo = setup.dir.join("demo.toml");
    let text = std::fs::read_to_string(&demo).unwrap();
    std::fs::write(&demo, text.replace("Add a task", "Add one task")).unwrap();
    let reloaded = support::clients::wait_until(Duration::from_secs(20), || {
        (live.reload_counts().0 > before.0).then_some(())
    })
    .await;
    assert!(
        reloaded.is_some(),
        "an edit inside the directory did not reload"
    );
}
