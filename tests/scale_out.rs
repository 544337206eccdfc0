//! Replicas behind a real load balancer: three gateway processes (the binary)
//! sharing one session key (`MCP_UI_GATEWAY_SESSION_KEY`) behind HAProxy
//! (Debian's package, installed by `scripts/install-peers.sh`), all on
//! 127.0.0.1. Each gateway has three mounts: `/http/mcp`, the fixture over
//! streamable HTTP (in this process, shared by every replica),
//! `/stdio/mcp`, the fixture as a stdio child per session (`sessions =
//! "client"`), and `/shared/mcp`, the fixture as one stdio child per replica
//! that every session shares (the default).
//!
//! HAProxy runs the settings docs/deploy.md's "Scaling" section gives: health
//! checks on `/healthz` (with a Host header the gateway accepts), retries
//! redispatched to another server on a refused connection or an empty
//! response, round robin for the HTTP mount, and for the stdio mount a stick
//! table that learns each session id from the response that issued it
//! (`deploy/examples/ingress` carries the same lines); the shared mount
//! needs no affinity and goes round robin. Every response names the replica
//! that served it (`X-Served-By`).
//!
//! - (a) 20 sessions on the HTTP mount loop mixed calls (`tools/list`,
//!   `echo`, `add`, a 150 ms `slow`) while one replica is drained with
//!   SIGTERM (no call fails) and another is killed with SIGKILL (only calls
//!   in flight at that instant may fail; every session's later calls
//!   succeed, on the last replica).
//! - (b) 12 sessions on the stdio mount stay on the replica that started
//!   their child; one replica is killed with SIGKILL while every session has
//!   a call in flight: the other sessions lose nothing and stay where they
//!   are, the killed replica's sessions go on on a survivor, which opens
//!   their session again (same id) and names it in its answer, so that the
//!   balancer's stick table follows.
//! - (c) a rolling restart (each replica drained, restarted on its port and
//!   seen up by HAProxy before the next) under the load of (a): no call of
//!   an HTTP-upstream session fails.
//! - (d) the hosts as they really call (Claude: an initialize per call;
//!   ChatGPT: no session id at all) on the shared stdio mount, round robin,
//!   one replica killed mid-run: only calls in flight on it may fail.
//!
//! The three run one at a time (their figures are in RELIABILITY.md, printed
//! with `--nocapture`). Every loop is bounded in count and time; processes
//! are killed when their guards drop.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::client::legacy::{Client as HyperClient, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use support::clients::parse_sse;
use support::process::{
    self, Proc, Stream, endpoint_url, start_haproxy, stdio_children, wait_gone_async,
    with_fresh_port,
};
use support::upstreams::{HttpFlavor, STDIO_COMMAND, start_http};

use crate::support;

const KEY: &str = "5d2e8c1f0a9b7d6e4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d";
const PROTOCOL: &str = "2025-11-25";
const HTTP_PATH: &str = "/http/mcp";
const STDIO_PATH: &str = "/stdio/mcp";
const SHARED_PATH: &str = "/shared/mcp";
/// Bound on every wait for a process, a port or a state.
const BOUND: Duration = Duration::from_secs(30);
/// Bound on one call.
const CALL_LIMIT: Duration = Duration::from_secs(20);
/// Sessions that loop calls in (a) and (c).
const HTTP_SESSIONS: usize = 20;
/// Sessions on the stdio mount in (b).
const STDIO_SESSIONS: usize = 12;
/// Iteration cap of one session's loop.
const MAX_ITERATIONS: usize = 20_000;
/// Bound on a whole scenario.
const SCENARIO_LIMIT: Duration = Duration::from_secs(90);

/// One scenario at a time, and none beside the suite's other heavy tests: their
/// figures are measured, and a 2-core machine runs nine gateways badly.
async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    support::peers::HEAVY.lock().await
}

// ---------------------------------------------------------------------------------------
// Gateways and the balancer

/// A gateway process.
struct Replica {
    /// HAProxy's name for it: g1, g2, g3.
    name: String,
    port: u16,
    proc: Proc,
}

/// The gateway configuration every replica reads.
fn write_config(dir: &Path, upstream: &str) {
    let config = format!(
        r#"shutdown_grace_secs = 10

[limits]
request_timeout_secs = 30

[[upstream]]
name = "http"
path = "{HTTP_PATH}"
url = "{upstream}"

[[upstream]]
name = "stdio"
path = "{STDIO_PATH}"
command = "{STDIO_COMMAND}"
sessions = "client"

[[upstream]]
name = "shared"
path = "{SHARED_PATH}"
command = "{STDIO_COMMAND}"
"#
    );
    std::fs::write(dir.join("gateway.toml"), config).unwrap();
}

/// Starts the gateway on `port` (0: any) and waits for its endpoint line.
async fn spawn_replica(dir: &Path, name: &str, port: u16) -> Result<Replica, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.arg("serve")
        .arg("--config")
        .arg(dir.join("gateway.toml"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--workers", "1"])
        .current_dir(dir)
        .env("MCP_UI_GATEWAY_SESSION_KEY", KEY)
        .env("RUST_LOG", "warn");
    let proc = Proc::spawn(name, &mut cmd);
    let url = proc
        .look_for_async(BOUND, |stream, line| {
            endpoint_url(line).filter(|_| stream == Stream::Stdout)
        })
        .await
        .map_err(|e| format!("{name}: no endpoint ({e:?})\n{}", proc.tail(20)))?;
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("{name}: no port in {url}"))?;
    Ok(Replica {
        name: name.into(),
        port,
        proc,
    })
}

/// Starts a replacement on a port a stopped replica held, retrying while
/// the port is not yet free.
async fn respawn_replica(dir: &Path, name: &str, port: u16) -> Replica {
    let deadline = Instant::now() + BOUND;
    loop {
        match spawn_replica(dir, name, port).await {
            Ok(replica) => return replica,
            Err(e) => {
                assert!(Instant::now() < deadline, "{name} did not restart: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// HAProxy's configuration: the settings docs/deploy.md recommends.
fn haproxy_config(port: u16, replicas: &[(String, u16)]) -> String {
    let servers: String = replicas
        .iter()
        .map(|(name, port)| format!("    server {name} 127.0.0.1:{port}\n"))
        .collect();
    format!(
        r#"global
    maxconn 2000

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 10s
    timeout check 2s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response
    option httpchk
    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    default-server check inter 300ms fastinter 200ms downinter 300ms fall 2 rise 2

frontend mcp
    bind 127.0.0.1:{port}
    stats enable
    stats uri /haproxy-stats
    http-response set-header X-Served-By %s
    use_backend stdio if {{ path_beg /stdio/ }}
    default_backend http

backend http
    balance roundrobin
{servers}
backend stdio
    balance roundrobin
    stick-table type binary len 20 size 100k expire 1h
    stick match req.hdr(mcp-session-id),sha1
    stick store-response res.hdr(mcp-session-id),sha1
{servers}"#
    )
}

struct Balancer {
    url: String,
    proc: Proc,
}

/// Starts HAProxy in the foreground on a fresh port in front of `replicas`.
async fn start_balancer(dir: &Path, replicas: &[&Replica]) -> Balancer {
    let servers: Vec<(String, u16)> = replicas.iter().map(|r| (r.name.clone(), r.port)).collect();
    let started = with_fresh_port(5, async |port| {
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, haproxy_config(port, &servers)).unwrap();
        let proc = start_haproxy(&file, port, BOUND).await?;
        Ok(Balancer {
            url: format!("http://127.0.0.1:{port}"),
            proc,
        })
    })
    .await;
    let balancer = started.unwrap_or_else(|e| panic!("{e}"));
    balancer
        .wait_up(&replicas.iter().map(|r| r.name.as_str()).collect::<Vec<_>>())
        .await;
    balancer
}

impl Balancer {
    /// Each server's status by (backend, server), from the stats page.
    async fn states(&self) -> BTreeMap<(String, String), String> {
        let client = client();
        let Ok(Ok((status, _, body))) = call(
            &client,
            Method::GET,
            &format!("{}/haproxy-stats;csv", self.url),
            &[],
            Bytes::new(),
        )
        .await
        else {
            return BTreeMap::new();
        };
        if status != StatusCode::OK {
            return BTreeMap::new();
        }
        let text = String::from_utf8_lossy(&body);
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let at = |name: &str| header.iter().position(|h| *h == name);
        let (Some(px), Some(sv), Some(st)) = (at("pxname"), at("svname"), at("status")) else {
            return BTreeMap::new();
        };
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.len() > st)
            .map(|f| ((f[px].to_owned(), f[sv].to_owned()), f[st].to_owned()))
            .collect()
    }

    /// Waits until HAProxy has each of `servers` up in both backends.
    async fn wait_up(&self, servers: &[&str]) {
        let deadline = Instant::now() + BOUND;
        loop {
            let states = self.states().await;
            let up = |backend: &str, server: &str| {
                states
                    .get(&(backend.to_owned(), server.to_owned()))
                    .is_some_and(|s| s.starts_with("UP"))
            };
            if servers.iter().all(|s| up("http", s) && up("stdio", s)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "HAProxy does not see {servers:?} up: {states:?}\n{}",
                self.proc.tail(20)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Clients

type Http = HyperClient<HttpConnector, Full<Bytes>>;

/// A client with its own keep-alive connections (to HAProxy), closed when
/// idle for less than HAProxy's keep-alive timeout.
fn client() -> Http {
    HyperClient::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(5))
        .build_http()
}

type Answer = (StatusCode, HeaderMap, Bytes);

async fn call(
    client: &Http,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Result<Result<Answer, String>, tokio::time::error::Elapsed> {
    let mut builder = Request::builder().method(method).uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Full::new(body)).unwrap();
    tokio::time::timeout(CALL_LIMIT, async {
        let response = client
            .request(request)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok((parts.status, parts.headers, body))
    })
    .await
}

/// An MCP POST through the balancer.
async fn post(client: &Http, url: &str, sid: Option<&str>, body: &Value) -> Result<Answer, String> {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", PROTOCOL),
    ];
    if let Some(sid) = sid {
        headers.push(("mcp-session-id", sid));
    }
    match call(
        client,
        Method::POST,
        url,
        &headers,
        Bytes::from(body.to_string()),
    )
    .await
    {
        Ok(answer) => answer,
        Err(_) => Err(format!("no answer within {CALL_LIMIT:?}")),
    }
}

fn served_by(headers: &HeaderMap) -> String {
    headers
        .get("x-served-by")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("?")
        .to_owned()
}

/// The JSON-RPC answer to request `id` in a JSON or SSE body.
fn answer_to(headers: &HeaderMap, body: &[u8], id: &Value) -> Option<Value> {
    let sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let messages: Vec<Value> = if sse {
        parse_sse(body)
            .iter()
            .filter_map(|e| e.json().ok())
            .collect()
    } else {
        serde_json::from_slice(body).ok().into_iter().collect()
    };
    messages.into_iter().find(|m| m["id"] == *id)
}

/// A session opened through the balancer: its id and the replica that
/// answered `initialize`.
struct Session {
    sid: String,
    server: String,
}

async fn open_session(client: &Http, url: &str) -> Result<Session, String> {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":PROTOCOL,"capabilities":{},"clientInfo":{"name":"scale-out","version":"1"}}});
    let (status, headers, body) = post(client, url, None, &init).await?;
    if status != StatusCode::OK {
        return Err(format!(
            "initialize: {status} {}",
            String::from_utf8_lossy(&body)
        ));
    }
    let sid = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .ok_or("initialize: no session id")?
        .to_owned();
    let server = served_by(&headers);
    let (status, _, _) = post(
        client,
        url,
        Some(&sid),
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await?;
    if status != StatusCode::ACCEPTED {
        return Err(format!("notifications/initialized: {status}"));
    }
    Ok(Session { sid, server })
}

/// The `i`-th call of a session's mix and how to tell its answer is right.
fn mixed_call(i: usize, id: u64) -> (Value, &'static str) {
    let params = match i % 4 {
        0 => {
            return (
                json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}),
                "tools/list",
            );
        }
        1 => json!({"name":"echo","arguments":{"text":format!("call {id}")}}),
        2 => json!({"name":"add","arguments":{"a":id,"b":1}}),
        _ => json!({"name":"slow","arguments":{"ms":150}}),
    };
    let what = ["", "echo", "add", "slow"][i % 4];
    (
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}),
        what,
    )
}

/// Whether `answer` is the right result for the `i`-th mixed call `id`.
fn mixed_ok(i: usize, id: u64, answer: &Value) -> bool {
    let result = &answer["result"];
    match i % 4 {
        0 => result["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "slow")),
        1 => result["content"][0]["text"] == format!("call {id}"),
        2 => result["structuredContent"]["sum"] == id + 1,
        _ => result["content"][0]["text"] == "slept 150 ms",
    }
}

/// One call as the load saw it.
#[derive(Clone)]
struct Record {
    session: usize,
    start: Instant,
    end: Instant,
    ok: bool,
    server: String,
    detail: String,
}

type Log = Arc<Mutex<Vec<Record>>>;

/// A session's calls, one after another, until `stop` (bounded).
async fn session_loop(url: String, session: usize, sid: String, stop: Arc<AtomicBool>, log: Log) {
    let client = client();
    let deadline = Instant::now() + SCENARIO_LIMIT;
    for i in 0..MAX_ITERATIONS {
        if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
            return;
        }
        let id = (session * MAX_ITERATIONS + i + 1) as u64;
        let (body, what) = mixed_call(i, id);
        let start = Instant::now();
        let got = post(&client, &url, Some(&sid), &body).await;
        let end = Instant::now();
        let (ok, server, detail) = match got {
            Ok((status, headers, body)) => {
                let answer = answer_to(&headers, &body, &json!(id));
                let ok =
                    status == StatusCode::OK && answer.as_ref().is_some_and(|a| mixed_ok(i, id, a));
                (
                    ok,
                    served_by(&headers),
                    format!(
                        "{what}: {status} {}",
                        process::truncate(&String::from_utf8_lossy(&body), 300)
                    ),
                )
            }
            Err(e) => (false, "?".into(), format!("{what}: {e}")),
        };
        log.lock().unwrap().push(Record {
            session,
            start,
            end,
            ok,
            server,
            detail,
        });
    }
}

/// Load on the HTTP mount: [`HTTP_SESSIONS`] sessions looping mixed calls.
struct Load {
    stop: Arc<AtomicBool>,
    log: Log,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    began: Instant,
}

impl Load {
    async fn start(balancer: &Balancer) -> Load {
        let url = format!("{}{HTTP_PATH}", balancer.url);
        let client = client();
        let mut sids = Vec::new();
        for _ in 0..HTTP_SESSIONS {
            let session = open_session(&client, &url).await.expect("a session opens");
            sids.push(session.sid);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let log: Log = Arc::default();
        let tasks = sids
            .into_iter()
            .enumerate()
            .map(|(n, sid)| {
                tokio::spawn(session_loop(url.clone(), n, sid, stop.clone(), log.clone()))
            })
            .collect();
        Load {
            stop,
            log,
            tasks,
            began: Instant::now(),
        }
    }

    /// Stops the loops and returns every call, in order of start.
    async fn finish(self) -> Vec<Record> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            tokio::time::timeout(BOUND, task)
                .await
                .expect("a session loop ends")
                .expect("a session loop does not panic");
        }
        let mut log = self.log.lock().unwrap().clone();
        log.sort_by_key(|r| r.start);
        log
    }
}

/// A call, for a failure message: its times relative to `origin`.
fn describe(r: &Record, origin: Instant) -> String {
    let at = |t: Instant| {
        if t >= origin {
            format!("+{} ms", (t - origin).as_millis())
        } else {
            format!("-{} ms", (origin - t).as_millis())
        }
    };
    format!(
        "session {} from {} to {} on {}: {}",
        r.session,
        at(r.start),
        at(r.end),
        r.server,
        r.detail
    )
}

/// How many times each name occurs.
fn count<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for name in names {
        *counts.entry(name.to_owned()).or_default() += 1;
    }
    counts
}

/// Calls by the replica that served them.
fn by_server<'a>(records: impl Iterator<Item = &'a Record>) -> BTreeMap<String, usize> {
    count(records.map(|r| r.server.as_str()))
}

fn latency_ms(records: &[&Record], quantile: f64) -> u128 {
    let mut ms: Vec<u128> = records
        .iter()
        .map(|r| (r.end - r.start).as_millis())
        .collect();
    ms.sort_unstable();
    ms.get(((ms.len() as f64 - 1.0) * quantile).round() as usize)
        .copied()
        .unwrap_or(0)
}

/// SIGTERM, and the bounded wait for a clean exit; how long the drain took.
async fn drain(replica: &mut Replica) -> Duration {
    let start = Instant::now();
    assert!(process::signal("TERM", &[replica.proc.pid]));
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(status) = replica.proc.try_wait() {
            assert!(
                status.success(),
                "{} exited {status}\n{}",
                replica.name,
                replica.proc.tail(20)
            );
            return start.elapsed();
        }
        assert!(Instant::now() < deadline, "{} did not exit", replica.name);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// SIGKILL, and the bounded wait for the exit.
async fn kill(replica: &mut Replica) {
    assert!(process::signal("KILL", &[replica.proc.pid]));
    let gone = wait_gone_async(vec![replica.proc.pid], BOUND).await;
    assert!(gone.is_empty(), "{} survived SIGKILL", replica.name);
    let _ = replica.proc.try_wait();
}

/// Three replicas and HAProxy in front of them.
struct Cluster {
    dir: tempfile::TempDir,
    replicas: Vec<Replica>,
    balancer: Balancer,
    _upstream: support::upstreams::Upstream,
}

async fn cluster() -> Cluster {
    let upstream = start_http(HttpFlavor::StatefulSse)
        .await
        .expect("the HTTP fixture");
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &upstream.url);
    let mut replicas = Vec::new();
    for name in ["g1", "g2", "g3"] {
        replicas.push(
            spawn_replica(dir.path(), name, 0)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        );
    }
    let balancer = start_balancer(dir.path(), &replicas.iter().collect::<Vec<_>>()).await;
    Cluster {
        dir,
        replicas,
        balancer,
        _upstream: upstream,
    }
}

// ---------------------------------------------------------------------------------------
// (a) drain and kill under round robin

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_drain_loses_nothing_and_a_kill_only_the_calls_in_flight() {
    let _turn = turn().await;
    let mut c = cluster().await;
    let load = Load::start(&c.balancer).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // g1 drains: it stops accepting, finishes what it has, exits 0.
    let term_at = Instant::now();
    let drained_in = drain(&mut c.replicas[0]).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // g2 dies.
    let kill_at = Instant::now();
    kill(&mut c.replicas[1]).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let log = load.finish().await;
    let began = log.first().map(|r| r.start).unwrap_or(term_at);

    let failed: Vec<&Record> = log.iter().filter(|r| !r.ok).collect();
    let not_in_flight_at_kill: Vec<&&Record> = failed
        .iter()
        .filter(|r| !(r.start < kill_at && r.end >= kill_at))
        .collect();
    let after_kill: Vec<&Record> = log.iter().filter(|r| r.start > kill_at).collect();
    let drain_window: Vec<&Record> = log
        .iter()
        .filter(|r| r.end >= term_at && r.end < kill_at)
        .collect();
    let around_kill: Vec<&Record> = log
        .iter()
        .filter(|r| r.end >= kill_at && r.start < kill_at + Duration::from_secs(1))
        .collect();
    println!(
        "(a) {} calls by {HTTP_SESSIONS} sessions over {:.1} s, by replica {:?}; \
         g1 drained in {} ms ({} calls ended during the drain window, {} failed); \
         g2 killed: {} calls failed (in flight at the kill: {}; {:?}), {} calls after the kill, by replica {:?}; \
         latency p50 {} ms, p99 {} ms, max {} ms; around the kill p99 {} ms, max {} ms",
        log.len(),
        (log.last().map(|r| r.end).unwrap_or(began) - began).as_secs_f64(),
        by_server(log.iter()),
        drained_in.as_millis(),
        drain_window.len(),
        drain_window.iter().filter(|r| !r.ok).count(),
        failed.len(),
        failed.len() - not_in_flight_at_kill.len(),
        failed
            .iter()
            .take(2)
            .map(|r| describe(r, kill_at))
            .collect::<Vec<_>>(),
        after_kill.len(),
        by_server(after_kill.iter().copied()),
        latency_ms(&log.iter().collect::<Vec<_>>(), 0.5),
        latency_ms(&log.iter().collect::<Vec<_>>(), 0.99),
        latency_ms(&log.iter().collect::<Vec<_>>(), 1.0),
        latency_ms(&around_kill, 0.99),
        latency_ms(&around_kill, 1.0),
    );
    assert!(
        not_in_flight_at_kill.is_empty(),
        "calls failed that were not in flight on the killed replica: {:#?}",
        not_in_flight_at_kill
            .iter()
            .take(5)
            .map(|r| describe(r, kill_at))
            .collect::<Vec<_>>()
    );
    assert!(
        failed.len() <= HTTP_SESSIONS,
        "more failures than sessions (one call in flight each): {}",
        failed.len()
    );
    for session in 0..HTTP_SESSIONS {
        assert!(
            after_kill.iter().any(|r| r.session == session && r.ok),
            "session {session} made no successful call after the kill"
        );
    }
    assert!(
        after_kill.iter().all(|r| r.server == "g3"),
        "only g3 is left: {:?}",
        by_server(after_kill.iter().copied())
    );
    let before_term = log.iter().filter(|r| r.end < term_at);
    assert_eq!(
        by_server(before_term).len(),
        3,
        "round robin used every replica"
    );
    drop(c.dir);
}

// ---------------------------------------------------------------------------------------
// (b) stdio sessions with affinity

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_sessions_stay_on_their_replica_and_the_killed_ones_go_on_elsewhere() {
    let _turn = turn().await;
    let mut c = cluster().await;
    let url = format!("{}{STDIO_PATH}", c.balancer.url);
    let client = client();
    let mut sessions = Vec::new();
    for _ in 0..STDIO_SESSIONS {
        sessions.push(
            open_session(&client, &url)
                .await
                .expect("a stdio session opens"),
        );
    }
    let placed = count(sessions.iter().map(|s| s.server.as_str()));
    // Each replica runs one child per session it started.
    for r in &c.replicas {
        let want = placed.get(&r.name).copied().unwrap_or(0);
        let deadline = Instant::now() + BOUND;
        while stdio_children(r.proc.pid).len() != want {
            assert!(
                Instant::now() < deadline,
                "{}: {} children, {want} sessions",
                r.name,
                stdio_children(r.proc.pid).len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // Every call of every session reaches the replica that holds its child.
    let echo = |n: usize, id: u64| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"text":format!("session {n}")}}});
    for round in 0..3u64 {
        let calls = sessions.iter().enumerate().map(|(n, s)| {
            let (client, url, body) = (client.clone(), url.clone(), echo(n, round));
            async move { post(&client, &url, Some(&s.sid), &body).await }
        });
        for ((n, s), got) in sessions
            .iter()
            .enumerate()
            .zip(futures_util::future::join_all(calls).await)
        {
            let (status, headers, body) = got.expect("an answer");
            assert_eq!(
                status,
                StatusCode::OK,
                "session {n}: {}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(served_by(&headers), s.server, "session {n} moved");
            let answer = answer_to(&headers, &body, &json!(round)).expect("the answer");
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("session {n}")
            );
        }
    }

    // A slow call in flight on every session when g2 is killed.
    let victim = "g2";
    let victims: Vec<usize> = (0..sessions.len())
        .filter(|&n| sessions[n].server == victim)
        .collect();
    assert!(
        !victims.is_empty(),
        "round robin placed sessions on {victim}: {placed:?}"
    );
    let slow = json!({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{"ms":1500}}});
    let in_flight: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (client, url, sid, body) =
                (client.clone(), url.clone(), s.sid.clone(), slow.clone());
            tokio::spawn(async move { post(&client, &url, Some(&sid), &body).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let victim_children = stdio_children(c.replicas[1].proc.pid);
    let killed_at = Instant::now();
    kill(&mut c.replicas[1]).await;
    let mut lost_in_flight = 0;
    for (n, task) in in_flight.into_iter().enumerate() {
        let got = task.await.unwrap();
        if victims.contains(&n) {
            if !matches!(&got, Ok((StatusCode::OK, _, _))) {
                lost_in_flight += 1;
            }
            continue;
        }
        let (status, headers, body) = got.unwrap_or_else(|e| panic!("session {n}: {e}"));
        assert_eq!(
            status,
            StatusCode::OK,
            "session {n}: {}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(served_by(&headers), sessions[n].server, "session {n} moved");
        let answer = answer_to(&headers, &body, &json!("slow")).expect("the answer");
        assert_eq!(answer["result"]["content"][0]["text"], "slept 1500 ms");
    }
    // The guardian ends the killed replica's children.
    let orphans = wait_gone_async(victim_children, BOUND).await;
    assert!(
        orphans.is_empty(),
        "children of the killed replica survive: {orphans:?}"
    );

    // After the kill: the killed replica's sessions go on on a survivor,
    // which opens each again (same id) and says so, so that the stick table
    // keeps them there; the others go on where they were.
    let mut restarted = 0;
    for (n, s) in sessions.iter_mut().enumerate() {
        let (status, headers, body) = post(&client, &url, Some(&s.sid), &echo(n, 10))
            .await
            .expect("an answer");
        if victims.contains(&n) {
            assert_eq!(
                status,
                StatusCode::OK,
                "session {n} of the killed replica: {}",
                String::from_utf8_lossy(&body)
            );
            let answer = answer_to(&headers, &body, &json!(10)).expect("the answer");
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("session {n}")
            );
            let now = served_by(&headers);
            assert_ne!(now, victim);
            s.server = now;
            restarted += 1;
            for round in 11..14 {
                let (status, headers, body) = post(&client, &url, Some(&s.sid), &echo(n, round))
                    .await
                    .expect("an answer");
                assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
                assert_eq!(
                    served_by(&headers),
                    s.server,
                    "session {n} stays where it went on"
                );
            }
        } else {
            assert_eq!(
                status,
                StatusCode::OK,
                "session {n}: {}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(served_by(&headers), s.server, "session {n} moved");
        }
    }
    println!(
        "(b) {STDIO_SESSIONS} stdio sessions placed {placed:?}; {victim} killed with a 1.5 s call in flight on each: \
         {lost_in_flight} of its {} calls lost, 0 of the {} others; its {} sessions went on on the \
         survivors, opened again there under the same id ({:.1} s after the kill, children reaped by the guardian)",
        victims.len(),
        STDIO_SESSIONS - victims.len(),
        restarted,
        killed_at.elapsed().as_secs_f64()
    );
    assert_eq!(restarted, victims.len());
}

// ---------------------------------------------------------------------------------------
// (c) a rolling restart

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_loses_no_call_of_http_upstream_sessions() {
    let _turn = turn().await;
    let mut c = cluster().await;
    let load = Load::start(&c.balancer).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut steps = Vec::new();
    let mut restarted_at = Vec::new();
    for i in 0..c.replicas.len() {
        let step = Instant::now();
        let drained_in = drain(&mut c.replicas[i]).await;
        let (name, port) = (c.replicas[i].name.clone(), c.replicas[i].port);
        c.replicas[i] = respawn_replica(c.dir.path(), &name, port).await;
        c.balancer.wait_up(&[&name]).await;
        restarted_at.push((name.clone(), Instant::now()));
        steps.push((name, drained_in, step.elapsed()));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let began = load.began;
    let log = load.finish().await;
    let failed: Vec<&Record> = log.iter().filter(|r| !r.ok).collect();
    let all: Vec<&Record> = log.iter().collect();
    println!(
        "(c) {} calls by {HTTP_SESSIONS} sessions over {:.1} s during a rolling restart of 3 replicas \
         (per replica: drain, restart on its port, seen up by HAProxy: {}); {} failed; \
         latency p50 {} ms, p99 {} ms, max {} ms; by replica {:?}",
        log.len(),
        began.elapsed().as_secs_f64(),
        steps
            .iter()
            .map(|(n, d, s)| format!(
                "{n} drained in {} ms, back in {} ms",
                d.as_millis(),
                s.as_millis()
            ))
            .collect::<Vec<_>>()
            .join("; "),
        failed.len(),
        latency_ms(&all, 0.5),
        latency_ms(&all, 0.99),
        latency_ms(&all, 1.0),
        by_server(log.iter()),
    );
    assert!(
        failed.is_empty(),
        "{} calls failed during the rolling restart: {:#?}",
        failed.len(),
        failed
            .iter()
            .take(5)
            .map(|r| describe(r, began))
            .collect::<Vec<_>>()
    );
    // Each new process served calls after its restart.
    for (name, at) in &restarted_at {
        assert!(
            log.iter().any(|r| r.start > *at && &r.server == name),
            "the restarted {name} served nothing"
        );
    }
}

// ---------------------------------------------------------------------------------------
// (d) the hosts' patterns on the shared stdio mount, no affinity

/// One host call: Claude's (claude-ai-mcp#583: initialize, then
/// `notifications/initialized` without the id (#99), then the call with it)
/// or ChatGPT's tool plane (ext-apps#647: the call without any session id).
/// Whether it was answered with a result, and by which replica.
async fn host_call(client: &Http, url: &str, claude: bool, n: usize) -> (bool, String) {
    let echo = json!({"jsonrpc":"2.0","id":n,"method":"tools/call","params":{"name":"echo","arguments":{"text":format!("call {n}")}}});
    let sid = if claude {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":PROTOCOL,"capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}});
        let Ok((StatusCode::OK, h, _)) = post(client, url, None, &init).await else {
            return (false, String::new());
        };
        let Some(sid) = h
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        else {
            return (false, String::new());
        };
        let _ = post(
            client,
            url,
            None,
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        )
        .await;
        Some(sid)
    } else {
        None
    };
    match post(client, url, sid.as_deref(), &echo).await {
        Ok((status, headers, body)) => {
            let ok = status == StatusCode::OK
                && answer_to(&headers, &body, &json!(n))
                    .is_some_and(|a| a["result"]["content"][0]["text"] == format!("call {n}"));
            (ok, served_by(&headers))
        }
        Err(_) => (false, String::new()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_patterns_on_a_shared_stdio_mount_need_no_affinity() {
    let _turn = turn().await;
    let mut c = cluster().await;
    let url = format!("{}{SHARED_PATH}", c.balancer.url);
    let stop = Arc::new(AtomicBool::new(false));
    let results = Arc::new(Mutex::new(Vec::<(Instant, bool, String)>::new()));
    let started = Instant::now();
    let workers: Vec<_> = (0..6)
        .map(|w| {
            let (url, stop, results) = (url.clone(), stop.clone(), results.clone());
            tokio::spawn(async move {
                let client = client();
                for i in 0..MAX_ITERATIONS {
                    if stop.load(Ordering::Relaxed) || started.elapsed() > SCENARIO_LIMIT {
                        break;
                    }
                    let (ok, server) = host_call(&client, &url, w % 2 == 0, i).await;
                    results.lock().unwrap().push((Instant::now(), ok, server));
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let killed_at = Instant::now();
    kill(&mut c.replicas[1]).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let results = results.lock().unwrap();
    let before: Vec<&(Instant, bool, String)> =
        results.iter().filter(|r| r.0 < killed_at).collect();
    let failed = results.iter().filter(|r| !r.1).count();
    let after_failed = results
        .iter()
        .filter(|r| r.0 > killed_at + Duration::from_millis(500) && !r.1)
        .count();
    let servers = count(before.iter().map(|r| r.2.as_str()));
    println!(
        "(d) {} host calls (Claude: an initialize per call; ChatGPT: no session id) by 6 hosts on the shared stdio mount, \
         round robin without affinity; before the kill served by {servers:?}; {failed} failed in all, {after_failed} \
         more than 0.5 s after g2 was killed",
        results.len()
    );
    assert_eq!(servers.len(), 3, "round robin used every replica");
    assert!(
        failed <= 6,
        "more failures than calls in flight at the kill: {failed}"
    );
    assert_eq!(after_failed, 0, "calls after the kill all answered");
    for r in &c.replicas {
        if r.name != "g2" {
            assert!(
                support::process::stdio_children(r.proc.pid).len() <= 2,
                "{}: one child per mount (the shared and at most one of stdio)",
                r.name
            );
        }
    }
}
