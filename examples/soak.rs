//! Soak test: many concurrent MCP sessions through a release gateway for a
//! fixed time, with mixed calls and overlay reloads, checking that nothing
//! fails and that the gateway's memory stays flat.
//!
//! It starts, all on 127.0.0.1: the bundled demo server over streamable HTTP
//! (`mcp-ui-gateway demo-server --http`), and the gateway in front of it
//! (mount `demo`, with a temporary copy of `overlays/`) and of the fixture
//! server as a stdio upstream (mount `echo`, one child per session). It
//! opens `--sessions` sessions (`--stdio-percent` of them on `echo`), warms
//! up, samples the gateway's RSS, then for `--secs` drives calls at
//! `--rate` per second round-robin over the sessions: `tools/list`, small and
//! larger `tools/call`s, `resources/read` of the widget, `ping`, and short
//! GET streams; some sessions also hold a GET stream open throughout and
//! count the `notifications/tools/list_changed` each reload announces.
//! Every `--reload-secs` it rewrites `demo.toml`, alternately a good edit
//! (a new title, which `tools/list` must then show) and a broken one (which
//! must change nothing). At the end it samples RSS again and prints the
//! report; the exit status is non-zero when any error occurred or RSS grew
//! by more than `--max-growth-percent`.
//!
//! `scripts/soak.sh` builds the binaries and runs this; by hand:
//! `cargo build --release --bins && cargo run --release --example soak --
//! --sessions 1000 --secs 600`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use bytes::Bytes;
use clap::Parser as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_ui_gateway::sse;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[path = "../tests/support/process.rs"]
mod process;
use process::{Proc, copy_dir, line_in_file};

/// Command-line options.
#[derive(clap::Parser, Debug, Clone)]
struct Args {
    /// Sessions held open for the whole run.
    #[arg(long, default_value_t = 1000)]
    sessions: usize,
    /// Duration of the measured run, after warm-up.
    #[arg(long, default_value_t = 600)]
    secs: u64,
    /// Warm-up under the same load before the first RSS sample.
    #[arg(long, default_value_t = 60)]
    warmup_secs: u64,
    /// Calls started per second, over all sessions.
    #[arg(long, default_value_t = 100)]
    rate: u64,
    /// Share of sessions on the stdio mount (each is a child process).
    #[arg(long, default_value_t = 5)]
    stdio_percent: usize,
    /// Share of sessions that hold a GET stream open throughout.
    #[arg(long, default_value_t = 10)]
    stream_percent: usize,
    /// Seconds between overlay rewrites (good and broken alternately).
    #[arg(long, default_value_t = 5)]
    reload_secs: u64,
    /// Largest RSS growth, start to end, that passes.
    #[arg(long, default_value_t = 10.0)]
    max_growth_percent: f64,
    /// The release gateway binary.
    #[arg(long, default_value = "target/release/mcp-ui-gateway")]
    gateway_bin: PathBuf,
    /// The fixture server binary (the stdio upstream).
    #[arg(long, default_value = "target/release/mcp-fixture-server")]
    fixture_bin: PathBuf,
    /// Overlay directory copied for the run.
    #[arg(long, default_value = "overlays")]
    overlays: PathBuf,
}

/// Bound on one exchange; a call that takes longer counts as an error.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// One op of each kind but the short GET stream (see `one_op`): tools/list,
/// ping, a small call, a large call, and a widget read (demo) or a second
/// large call (stdio).
const PRIMING_OPS: [u64; 5] = [0, 5, 8, 13, 16];
/// How long a short GET stream is read before the client drops it.
const SHORT_STREAM: Duration = Duration::from_millis(500);
/// In-flight calls at most.
const MAX_IN_FLIGHT: usize = 128;
/// Sessions opened concurrently at start.
const OPEN_CONCURRENCY: usize = 16;
/// How long a good overlay edit may take to show in `tools/list`.
const RELOAD_VISIBLE: Duration = Duration::from_secs(4);
const PROTOCOL: &str = "2025-11-25";
const ACCEPT: &str = "application/json, text/event-stream";

type HttpClient = Client<HttpConnector, Full<Bytes>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount {
    Demo,
    Echo,
}

struct Session {
    mount: Mount,
    url: String,
    id: String,
    version: String,
    /// Held while a call of the driver is in flight on this session.
    busy: Arc<tokio::sync::Mutex<()>>,
}

/// Counters shared by every task.
#[derive(Default)]
struct Stats {
    calls: AtomicU64,
    skipped_busy: AtomicU64,
    by_op: Mutex<BTreeMap<&'static str, u64>>,
    errors: Mutex<BTreeMap<String, u64>>,
    first_errors: Mutex<Vec<String>>,
    list_changed: AtomicU64,
    reloads_good: AtomicU64,
    reloads_bad: AtomicU64,
    reloads_seen: AtomicU64,
    reloads_kept: AtomicU64,
    /// Counting stops once the measured run ends.
    measuring: AtomicBool,
}

impl Stats {
    fn op(&self, op: &'static str) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        *self.by_op.lock().unwrap().entry(op).or_default() += 1;
    }

    fn error(&self, kind: String, detail: String) {
        *self.errors.lock().unwrap().entry(kind.clone()).or_default() += 1;
        let mut first = self.first_errors.lock().unwrap();
        if first.len() < 20 {
            first.push(format!("{kind}: {detail}"));
        }
    }

    fn error_count(&self) -> u64 {
        self.errors.lock().unwrap().values().sum()
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The `ADDR` of a `PREFIX http://ADDR/…` line.
fn addr_after(line: &str, prefix: &str) -> Option<SocketAddr> {
    line.trim()
        .strip_prefix(prefix)?
        .strip_prefix("http://")?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// Resident set size of a process, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or_else(|| anyhow!("no VmRSS for {pid}"))?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow!("bad VmRSS line"))?
        .parse()?)
}

async fn run(args: Args) -> anyhow::Result<bool> {
    for bin in [&args.gateway_bin, &args.fixture_bin] {
        if !bin.is_file() {
            bail!(
                "{} not found; build it first: cargo build --release --bins",
                bin.display()
            );
        }
    }
    let work = tempfile::Builder::new().prefix("mcp-ui-soak-").tempdir()?;
    // Nested one level: the gateway also watches the overlay directory's
    // parent, which must not be where its own log is written.
    let overlays = work.path().join("tree").join("overlays");
    copy_dir(&args.overlays, &overlays);
    let demo_toml = overlays.join("demo.toml");
    let original = std::fs::read_to_string(&demo_toml)
        .with_context(|| format!("{} (the demo overlay)", demo_toml.display()))?;

    // Both on port 0: each prints its address once bound.
    let mut cmd = Command::new(&args.gateway_bin);
    cmd.args(["demo-server", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let upstream = Proc::start("the demo server", &mut cmd).context("start the demo server")?;
    let upstream_addr = upstream
        .look_for_async(Duration::from_secs(30), |_, line| {
            addr_after(line, "demo server: ")
        })
        .await
        .map_err(|e| anyhow!("the demo server printed no address ({e:?})"))?;

    let config = work.path().join("gateway.toml");
    let stdio_sessions = args.sessions * args.stdio_percent / 100;
    std::fs::write(
        &config,
        format!(
            r#"listen = "127.0.0.1:0"
overlays = {overlays:?}

[limits]
max_sessions = {max}
session_idle_secs = 3600

[[upstream]]
name = "demo"
url = "http://{upstream_addr}/mcp"

[[upstream]]
name = "echo"
command = {fixture:?}
"#,
            overlays = overlays.display().to_string(),
            max = (stdio_sessions + 64).max(1024),
            fixture = args.fixture_bin.canonicalize()?.display().to_string(),
        ),
    )?;
    let log_path = work.path().join("gateway.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = Command::new(&args.gateway_bin);
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "info")
        .stdout(log.try_clone()?)
        .stderr(log);
    let mut gateway = Proc::start("the gateway", &mut cmd).context("start the gateway")?;
    let gateway_pid = gateway.pid;
    let gateway_addr = line_in_file(&log_path, &mut gateway, Duration::from_secs(30), |line| {
        addr_after(line, "MCP endpoint: ")
    })
    .await
    .map_err(|e| anyhow!(e))?;
    println!(
        "soak: gateway pid {gateway_pid} on http://{gateway_addr}, demo upstream on {upstream_addr}, log {}",
        log_path.display()
    );

    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(MAX_IN_FLIGHT)
        .build(connector);
    let stats = Arc::new(Stats::default());

    // Open every session.
    let started = Instant::now();
    let demo_url = format!("http://{gateway_addr}/demo/mcp");
    let echo_url = format!("http://{gateway_addr}/echo/mcp");
    let gate = Arc::new(Semaphore::new(OPEN_CONCURRENCY));
    let mut opening = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        // Spread the stdio sessions evenly.
        let echo = args
            .sessions
            .checked_div(stdio_sessions)
            .is_some_and(|every| i.is_multiple_of(every.max(1)));
        let (mount, url) = if echo {
            (Mount::Echo, echo_url.clone())
        } else {
            (Mount::Demo, demo_url.clone())
        };
        let client = client.clone();
        let gate = gate.clone();
        opening.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            open_session(&client, mount, url).await
        }));
    }
    let mut sessions = Vec::with_capacity(args.sessions);
    for task in opening {
        match task.await? {
            Ok(session) => sessions.push(Arc::new(session)),
            Err(e) => stats.error("open".into(), format!("{e:#}")),
        }
    }
    let echo_count = sessions.iter().filter(|s| s.mount == Mount::Echo).count();
    println!(
        "soak: {} sessions open ({} demo over HTTP, {} echo over stdio) in {:.1} s",
        sessions.len(),
        sessions.len() - echo_count,
        echo_count,
        started.elapsed().as_secs_f64()
    );
    if sessions.is_empty() {
        bail!("no session could be opened");
    }
    let widget_uri = Arc::new(Mutex::new(String::new()));
    let first_demo = sessions
        .iter()
        .find(|s| s.mount == Mount::Demo)
        .cloned()
        .ok_or_else(|| anyhow!("no demo session"))?;
    let tools = call(&client, &first_demo, "tools/list", json!({})).await?;
    *widget_uri.lock().unwrap() = show_tasks_uri(&tools)?;

    // Every session does every kind of call once before the clock starts,
    // so the buffers a kind of call grows per session (a 32 KB line through
    // a stdio child, say) are in the starting RSS: what the run then measures
    // is growth over time, not the first use of a call kind.
    let primed = Instant::now();
    {
        let gate = Arc::new(tokio::sync::Semaphore::new(64));
        let mut tasks = tokio::task::JoinSet::new();
        for session in &sessions {
            for op in PRIMING_OPS {
                let Ok(permit) = gate.clone().acquire_owned().await else {
                    break;
                };
                let (client, session, stats, uri) = (
                    client.clone(),
                    session.clone(),
                    stats.clone(),
                    widget_uri.clone(),
                );
                tasks.spawn(async move {
                    let _permit = permit;
                    let (name, result) = one_op(&client, &session, op, &uri).await;
                    stats.op(name);
                    if let Err(e) = result {
                        stats.error(kind_of(name, &e), format!("{e:#}"));
                    }
                });
            }
        }
        while tasks.join_next().await.is_some() {}
    }
    println!(
        "soak: every session made each kind of call once in {:.1} s",
        primed.elapsed().as_secs_f64()
    );

    // Long-lived GET streams on some sessions, counting announcements.
    let stop = tokio_util::sync::CancellationToken::new();
    let stream_every = 100usize
        .checked_div(args.stream_percent)
        .map_or(usize::MAX, |n| n.max(1));
    let mut streams = Vec::new();
    for session in sessions.iter().step_by(stream_every) {
        let (client, session, stats, stop) =
            (client.clone(), session.clone(), stats.clone(), stop.clone());
        streams.push(tokio::spawn(async move {
            hold_stream(&client, &session, &stats, stop).await;
        }));
    }

    // Load, reloads and RSS sampling.
    stats.measuring.store(true, Ordering::Relaxed);
    let driver = {
        let (client, sessions, stats, stop, uri) = (
            client.clone(),
            sessions.clone(),
            stats.clone(),
            stop.clone(),
            widget_uri.clone(),
        );
        let rate = args.rate.max(1);
        tokio::spawn(
            async move { drive(client, sessions, stats, stop, uri, rate, stream_every).await },
        )
    };
    let reloader = {
        let (client, session, stats, stop, uri) = (
            client.clone(),
            first_demo.clone(),
            stats.clone(),
            stop.clone(),
            widget_uri.clone(),
        );
        let period = Duration::from_secs(args.reload_secs.max(1));
        let path = demo_toml.clone();
        tokio::spawn(async move {
            reload_loop(
                &client, &session, &stats, stop, &uri, &path, &original, period,
            )
            .await;
        })
    };

    println!("soak: warming up for {} s", args.warmup_secs);
    tokio::time::sleep(Duration::from_secs(args.warmup_secs)).await;
    let rss_start = rss_kib(gateway_pid)?;
    let calls_at_start = stats.calls.load(Ordering::Relaxed);
    let errors_at_start = stats.error_count();
    println!(
        "soak: RSS at start {rss_start} KiB; running {} s at {} calls/s",
        args.secs, args.rate
    );
    let run_start = Instant::now();
    let mut rss_max = rss_start;
    let mut samples = vec![rss_start];
    while run_start.elapsed() < Duration::from_secs(args.secs) {
        let left = Duration::from_secs(args.secs).saturating_sub(run_start.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(30))).await;
        let rss = rss_kib(gateway_pid)?;
        rss_max = rss_max.max(rss);
        samples.push(rss);
        println!(
            "soak: t={:>4} s calls={} errors={} rss={} KiB",
            run_start.elapsed().as_secs(),
            stats.calls.load(Ordering::Relaxed),
            stats.error_count(),
            rss
        );
    }
    stop.cancel();
    let measured_secs = run_start.elapsed().as_secs_f64();
    let _ = tokio::time::timeout(Duration::from_secs(60), driver).await;
    let _ = tokio::time::timeout(Duration::from_secs(60), reloader).await;
    for stream in streams {
        let _ = tokio::time::timeout(Duration::from_secs(10), stream).await;
    }
    let rss_end = rss_kib(gateway_pid)?;
    stats.measuring.store(false, Ordering::Relaxed);

    // Close the sessions as a host would.
    let mut closed = 0;
    for session in &sessions {
        if delete_session(&client, session).await.is_ok() {
            closed += 1;
        }
    }
    let gateway_alive = std::fs::metadata(format!("/proc/{gateway_pid}")).is_ok();
    drop(gateway);

    let growth = (rss_end as f64 - rss_start as f64) * 100.0 / rss_start as f64;
    let errors = stats.errors.lock().unwrap().clone();
    let total_errors: u64 = errors.values().sum();
    let calls = stats.calls.load(Ordering::Relaxed);
    println!("\n== soak report ==");
    println!(
        "sessions: {} open ({} HTTP upstream, {} stdio), {} long-lived GET streams, {} closed at the end",
        sessions.len(),
        sessions.len() - echo_count,
        echo_count,
        sessions
            .len()
            .div_ceil(stream_every.min(sessions.len()).max(1)),
        closed
    );
    println!(
        "duration: {:.0} s measured after {} s warm-up; calls: {} in all, {} measured ({:.1}/s); skipped (session busy): {}",
        measured_secs,
        args.warmup_secs,
        calls,
        calls - calls_at_start,
        (calls - calls_at_start) as f64 / measured_secs,
        stats.skipped_busy.load(Ordering::Relaxed)
    );
    let ops = stats.by_op.lock().unwrap().clone();
    println!(
        "calls by kind: {}",
        ops.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "errors: {total_errors} ({} during warm-up){}",
        errors_at_start,
        if errors.is_empty() {
            String::new()
        } else {
            format!(
                " by kind: {}",
                errors
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    );
    for e in stats.first_errors.lock().unwrap().iter() {
        println!("  first errors: {e}");
    }
    println!(
        "reloads: {} good edits written, {} applied (seen in tools/list); {} broken edits written, {} rejected (last good kept); list_changed announcements received: {}",
        stats.reloads_good.load(Ordering::Relaxed),
        stats.reloads_seen.load(Ordering::Relaxed),
        stats.reloads_bad.load(Ordering::Relaxed),
        stats.reloads_kept.load(Ordering::Relaxed),
        stats.list_changed.load(Ordering::Relaxed),
    );
    println!(
        "gateway RSS: start {rss_start} KiB, end {rss_end} KiB, growth {growth:+.1} % (max {rss_max} KiB; samples {})",
        samples
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let pass = total_errors == 0 && growth <= args.max_growth_percent && gateway_alive;
    println!(
        "result: {} (errors must be 0, RSS growth at most {} %{})",
        if pass { "PASS" } else { "FAIL" },
        args.max_growth_percent,
        if gateway_alive {
            ""
        } else {
            "; the gateway exited"
        }
    );
    if !pass {
        println!("gateway log: {}", log_path.display());
        // Keep the log for a failed run.
        let _ = work.keep();
    }
    Ok(pass)
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

async fn send(
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

async fn open_session(client: &HttpClient, mount: Mount, url: String) -> anyhow::Result<Session> {
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

async fn delete_session(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
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
async fn call(
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

fn show_tasks_uri(tools: &Value) -> anyhow::Result<String> {
    tools["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "show_tasks"))
        .and_then(|t| t.pointer("/_meta/ui/resourceUri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("check: tools/list has no show_tasks with _meta.ui.resourceUri"))
}

fn tool_title(tools: &Value, name: &str) -> Option<String> {
    tools["tools"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)?
        .get("title")?
        .as_str()
        .map(str::to_owned)
}

/// The error kind: the first word of the message and, for HTTP statuses and
/// JSON-RPC errors, the number.
fn kind_of(op: &str, e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("error").trim_end_matches(':');
    let kind = match first {
        "http" | "jsonrpc" => {
            let next = words.next().unwrap_or_default();
            let next = if next == "error" {
                words.next().unwrap_or_default()
            } else {
                next
            };
            format!("{first}_{}", next.trim_end_matches(':'))
        }
        other => other.to_owned(),
    };
    format!("{op}:{kind}")
}

async fn drive(
    client: HttpClient,
    sessions: Vec<Arc<Session>>,
    stats: Arc<Stats>,
    stop: tokio_util::sync::CancellationToken,
    uri: Arc<Mutex<String>>,
    rate: u64,
    stream_every: usize,
) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        while tasks.try_join_next().is_some() {}
        let index = (n as usize) % sessions.len();
        let session = sessions[index].clone();
        // A session holding its long-lived GET stream gets no second one.
        let holds_stream = index.is_multiple_of(stream_every);
        // The op cycles independently of the session, so every session sees
        // every kind of call over time.
        let op = (n / sessions.len() as u64 + n) % 20;
        n += 1;
        let Ok(busy) = session.busy.clone().try_lock_owned() else {
            stats.skipped_busy.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        let (client, stats, uri) = (client.clone(), stats.clone(), uri.clone());
        tasks.spawn(async move {
            let _permit = permit;
            let _busy = busy;
            let op = if holds_stream && op == 7 { 5 } else { op };
            let (name, result) = one_op(&client, &session, op, &uri).await;
            stats.op(name);
            if let Err(e) = result {
                stats.error(kind_of(name, &e), format!("{e:#}"));
            }
        });
    }
    while tokio::time::timeout(CALL_TIMEOUT * 2, tasks.join_next())
        .await
        .ok()
        .flatten()
        .is_some()
    {}
}

async fn one_op(
    client: &HttpClient,
    session: &Session,
    op: u64,
    uri: &Mutex<String>,
) -> (&'static str, anyhow::Result<()>) {
    match (session.mount, op) {
        (_, 0..=4) => ("tools/list", tools_list(client, session).await),
        (_, 5..=6) => (
            "ping",
            call(client, session, "ping", json!({})).await.map(drop),
        ),
        (_, 7) => ("get-stream", short_stream(client, session).await),
        (Mount::Demo, 8..=12) => ("call-small", demo_small(client, session).await),
        (Mount::Demo, 13..=15) => ("call-large", demo_large(client, session).await),
        (Mount::Demo, _) => {
            let uri = uri.lock().unwrap().clone();
            ("resources/read", read_widget(client, session, &uri).await)
        }
        (Mount::Echo, 8..=12) => ("call-small", echo_add(client, session).await),
        (Mount::Echo, _) => ("call-large", echo_large(client, session).await),
    }
}

async fn tools_list(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let result = call(client, session, "tools/list", json!({})).await?;
    match session.mount {
        Mount::Demo => show_tasks_uri(&result).map(drop),
        Mount::Echo => {
            if tool_title(&result, "echo").is_none()
                && !result["tools"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["name"] == "echo"))
            {
                bail!("check: the echo upstream lists no echo tool");
            }
            Ok(())
        }
    }
}

async fn demo_small(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let params = json!({ "name": "list_tasks", "arguments": {} });
    let result = call(client, session, "tools/call", params).await?;
    if !result
        .pointer("/structuredContent/tasks")
        .is_some_and(Value::is_array)
    {
        bail!("check: list_tasks has no structuredContent.tasks: {result}");
    }
    Ok(())
}

/// A gateway-answered render call with a 200-task argument (~12 KB).
async fn demo_large(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let tasks: Vec<Value> = (1..=200)
        .map(|i| json!({ "id": i, "title": format!("Soak task number {i} with a longer title"), "done": i % 3 == 0 }))
        .collect();
    let params = json!({ "name": "show_tasks", "arguments": { "tasks": tasks } });
    let result = call(client, session, "tools/call", params).await?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        bail!("check: show_tasks answered isError: {result}");
    }
    if result
        .pointer("/structuredContent/tasks")
        .and_then(Value::as_array)
        .map(Vec::len)
        != Some(200)
    {
        bail!("check: show_tasks did not return the 200 tasks");
    }
    Ok(())
}

async fn read_widget(client: &HttpClient, session: &Session, uri: &str) -> anyhow::Result<()> {
    let result = call(client, session, "resources/read", json!({ "uri": uri })).await?;
    let content = &result["contents"][0];
    if !content["text"]
        .as_str()
        .is_some_and(|t| t.contains("<html") || t.contains("<!doctype") || t.contains("<!DOCTYPE"))
    {
        bail!("check: resources/read of {uri} returned no HTML");
    }
    Ok(())
}

async fn echo_add(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let params = json!({ "name": "add", "arguments": { "a": 20, "b": 22 } });
    let result = call(client, session, "tools/call", params).await?;
    if !result.to_string().contains("42") {
        bail!("check: add(20, 22) did not answer 42: {result}");
    }
    Ok(())
}

/// A 32 KB echo through a stdio child.
async fn echo_large(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let text: String = "soak-0123456789abcdef-".repeat(32 * 1024 / 22);
    let params = json!({ "name": "echo", "arguments": { "text": text } });
    let result = call(client, session, "tools/call", params).await?;
    if result.pointer("/content/0/text").and_then(Value::as_str) != Some(text.as_str()) {
        bail!("check: echo did not return its 32 KB text");
    }
    Ok(())
}

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
async fn short_stream(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
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
async fn hold_stream(
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

#[allow(clippy::too_many_arguments)]
async fn reload_loop(
    client: &HttpClient,
    session: &Session,
    stats: &Stats,
    stop: tokio_util::sync::CancellationToken,
    uri: &Mutex<String>,
    path: &Path,
    original: &str,
    period: Duration,
) {
    const TITLE: &str = "title = \"List tasks\"";
    let mut revision = 0u64;
    let mut good = true;
    let mut expected = "List tasks".to_owned();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        revision += 1;
        let text = if good {
            expected = format!("List tasks (revision {revision})");
            original.replacen(TITLE, &format!("title = \"{expected}\""), 1)
        } else {
            // A broken edit: an unterminated table header.
            format!("{original}\n[tools.list_tasks\n")
        };
        if let Err(e) = std::fs::write(path, text) {
            stats.error("reload:write".into(), e.to_string());
            return;
        }
        if good {
            stats.reloads_good.fetch_add(1, Ordering::Relaxed);
        } else {
            stats.reloads_bad.fetch_add(1, Ordering::Relaxed);
        }
        // Watch tools/list: a good edit must show, a broken one must not
        // change what is served.
        let deadline = Instant::now() + RELOAD_VISIBLE;
        let mut seen = None;
        loop {
            match call(client, session, "tools/list", json!({})).await {
                Ok(tools) => {
                    seen = tool_title(&tools, "list_tasks");
                    if let Ok(u) = show_tasks_uri(&tools) {
                        *uri.lock().unwrap() = u;
                    }
                }
                Err(e) => stats.error(kind_of("reload:tools/list", &e), format!("{e:#}")),
            }
            if (good && seen.as_deref() == Some(expected.as_str())) || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let shown = seen.as_deref() == Some(expected.as_str());
        match (good, shown) {
            (true, true) => {
                stats.reloads_seen.fetch_add(1, Ordering::Relaxed);
            }
            (false, true) => {
                stats.reloads_kept.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => stats.error(
                "reload:not-applied".into(),
                format!("revision {revision}: saw {seen:?}"),
            ),
            (false, false) => stats.error(
                "reload:broken-applied".into(),
                format!("revision {revision}: saw {seen:?}"),
            ),
        }
        good = !good;
    }
}
