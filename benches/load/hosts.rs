//! The `hosts` scenario: the two ways the big hosts call, against a stdio
//! server of the Python SDK (tests/peers/py_server.py) behind the gateway,
//! before and after client sessions stopped owning a process.
//!
//! - Claude's connectors (claude-ai-mcp#583, #99): `initialize`, then
//!   `notifications/initialized` without the session id, then the call with
//!   it; a new session for every call, never a DELETE. One host call is the
//!   three requests.
//! - ChatGPT's tool plane (ext-apps#647): `tools/call` without a session id.
//! - The reference: calls on one session opened once and reused.
//!
//! "Before" is the gateway with one process per client session (`sessions
//! = "client"`, what every stdio mount did before); or, with
//! `LOAD_BEFORE_GATEWAY=PATH`, another build of the gateway (an older
//! release), run with its defaults. "After" is the default (`sessions =
//! "shared"`, a pool of one). Each point: calls a second, p50 and p99 of a
//! host call, the processes the gateway started (distinct child PIDs seen,
//! sampled every 50 ms), and the RSS of the gateway and of its children at
//! the end.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;

use crate::procs::{self, Proc};

/// One point: its patterns, and what they cost.
pub struct HostPoint {
    pub gateway: String,
    pub pattern: &'static str,
    pub concurrency: usize,
    pub calls: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub processes: usize,
    pub gateway_rss_kib: u64,
    pub children_rss_kib: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Pattern {
    Reused,
    Claude,
    ChatGpt,
}

impl Pattern {
    fn name(self) -> &'static str {
        match self {
            Pattern::Reused => "reused session (reference)",
            Pattern::Claude => "Claude: initialize per call",
            Pattern::ChatGpt => "ChatGPT: no session id",
        }
    }
}

/// A keep-alive HTTP/1.1 connection to a gateway, sending as a host does.
struct Wire {
    sender: SendRequest<Full<Bytes>>,
    addr: SocketAddr,
}

impl Wire {
    async fn open(addr: SocketAddr) -> Result<Wire, String> {
        Ok(Wire {
            sender: crate::tls::connect(addr, None).await?,
            addr,
        })
    }

    /// POST `body` with `session` and `agent`; the session id answered and
    /// whether the body holds a result (not an error).
    async fn post(
        &mut self,
        body: String,
        session: Option<&str>,
        agent: &str,
    ) -> Result<Option<String>, String> {
        let mut req = http::Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("user-agent", agent)
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let resp = tokio::time::timeout(Duration::from_secs(30), self.sender.send_request(req))
            .await
            .map_err(|_| "no answer in 30 s".to_owned())?
            .map_err(|e| e.to_string())?;
        let status = resp.status();
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
        }
        if status == http::StatusCode::OK && !memchr_find(&body, b"\"result\"") {
            return Err(format!(
                "no result: {}",
                String::from_utf8_lossy(&body)
                    .chars()
                    .take(300)
                    .collect::<String>()
            ));
        }
        Ok(sid)
    }
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn init(client: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"{client}","version":"1"}}}}}}"#
    )
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `tools/call` of the server's `count_tasks` as request `id`, with `meta`.
fn call(id: u64, meta: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"count_tasks","arguments":{{}},"_meta":{meta}}}}}"#
    )
}

/// One host call of `pattern` on `wire` (`session`: the reused session).
async fn host_call(
    wire: &mut Wire,
    pattern: Pattern,
    session: Option<&str>,
    n: u64,
) -> Result<(), String> {
    match pattern {
        Pattern::Reused => {
            wire.post(call(n, "{}"), session, "mcp-ui-gateway-load")
                .await?;
        }
        Pattern::Claude => {
            let sid = wire
                .post(init("claude-ai"), None, "Claude-User")
                .await?
                .ok_or("no session id")?;
            wire.post(INITIALIZED.into(), None, "Claude-User").await?;
            wire.post(call(n, "{}"), Some(&sid), "Claude-User").await?;
        }
        Pattern::ChatGpt => {
            let meta = r#"{"openai/session":"v1/bench","openai/subject":"v1/bench"}"#;
            wire.post(call(n, meta), None, "openai-mcp/1.0.0").await?;
        }
    }
    Ok(())
}

/// Distinct child PIDs of `pid` seen until `stop`.
fn watch_children(
    pid: u32,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<HashSet<u32>> {
    std::thread::spawn(move || {
        let mut seen = HashSet::new();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            seen.extend(crate::process::stdio_children(pid));
            std::thread::sleep(Duration::from_millis(50));
        }
        seen.extend(crate::process::stdio_children(pid));
        seen
    })
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// One point: `conc` hosts making `pattern` calls until `calls` are made or
/// `secs` have passed, against a fresh gateway.
async fn point(
    gw: &Proc,
    name: &str,
    pattern: Pattern,
    conc: usize,
    calls: usize,
    secs: f64,
) -> HostPoint {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = watch_children(gw.pid, stop.clone());
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(calls)));
    let errors = Arc::new(Mutex::new((0usize, None::<String>)));
    let left = Arc::new(std::sync::atomic::AtomicUsize::new(calls));
    let started = Instant::now();
    let workers: Vec<_> = (0..conc)
        .map(|_| {
            let (latencies, errors, left) = (latencies.clone(), errors.clone(), left.clone());
            let addr = gw.addr;
            tokio::spawn(async move {
                let mut wire = match Wire::open(addr).await {
                    Ok(w) => w,
                    Err(e) => {
                        let mut g = errors.lock().unwrap();
                        g.0 += 1;
                        g.1.get_or_insert(e);
                        return;
                    }
                };
                let session = match pattern {
                    Pattern::Reused => {
                        match wire.post(init("load"), None, "mcp-ui-gateway-load").await {
                            Ok(Some(s)) => {
                                let _ = wire
                                    .post(INITIALIZED.into(), Some(&s), "mcp-ui-gateway-load")
                                    .await;
                                Some(s)
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let mut n = 1;
                while Instant::now() < deadline
                    && left
                        .fetch_update(
                            std::sync::atomic::Ordering::AcqRel,
                            std::sync::atomic::Ordering::Acquire,
                            |l| l.checked_sub(1),
                        )
                        .is_ok()
                {
                    let t = Instant::now();
                    match host_call(&mut wire, pattern, session.as_deref(), n).await {
                        Ok(()) => latencies
                            .lock()
                            .unwrap()
                            .push(t.elapsed().as_secs_f64() * 1e6),
                        Err(e) => {
                            {
                                let mut g = errors.lock().unwrap();
                                g.0 += 1;
                                g.1.get_or_insert(e);
                            }
                            // The connection may be gone: another one.
                            if let Ok(w) = Wire::open(addr).await {
                                wire = w;
                            }
                        }
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = watcher.join().unwrap_or_default();
    let children: u64 = crate::process::stdio_children(gw.pid)
        .iter()
        .map(|p| rss_kib(*p))
        .sum();
    let mut lat = std::mem::take(&mut *latencies.lock().unwrap());
    lat.sort_by(f64::total_cmp);
    let q = |f: f64| {
        lat.get(((lat.len() as f64 - 1.0) * f).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let (errs, first) = errors.lock().unwrap().clone();
    HostPoint {
        gateway: name.to_owned(),
        pattern: pattern.name(),
        concurrency: conc,
        calls: lat.len(),
        errors: errs,
        first_error: first,
        per_sec: lat.len() as f64 / elapsed,
        p50_us: q(0.5),
        p99_us: q(0.99),
        processes: seen.len(),
        gateway_rss_kib: rss_kib(gw.pid),
        children_rss_kib: children,
    }
}

/// The gateway `program` in front of the Python stdio server, with
/// `sessions` when given.
async fn start(
    program: &Path,
    name: &str,
    python: &Path,
    server: &Path,
    sessions: Option<&str>,
    logs: &Path,
) -> Result<Proc, String> {
    let file = logs.join(format!("{name}.toml"));
    let mut toml = format!(
        "overlays = \"/nonexistent\"\n[[upstream]]\nname = \"py\"\npath = \"/mcp\"\ncommand = {:?}\nargs = [{:?}]\n",
        python.display().to_string(),
        server.display().to_string()
    );
    if let Some(s) = sessions {
        toml.push_str(&format!("sessions = \"{s}\"\n"));
    }
    std::fs::write(&file, toml).map_err(|e| e.to_string())?;
    let args: Vec<String> = ["serve", "--listen", "127.0.0.1:0", "--config"]
        .iter()
        .map(|s| s.to_string())
        .chain([file.display().to_string()])
        .collect();
    procs::gateway(name, program, &args, &[("RUST_LOG", "warn")], logs).await
}

/// Every point of the scenario: for each pattern and concurrency, a fresh
/// "before" and "after" gateway, `calls` host calls or `secs`, whichever
/// ends first.
pub async fn run(
    root: &Path,
    gateway: &Path,
    logs: &Path,
    concs: &[usize],
    calls: usize,
    secs: f64,
) -> Result<Vec<HostPoint>, String> {
    let python = root.join("tests/peers/.venv/bin/python");
    let server = root.join("tests/peers/py_server.py");
    if !python.exists() {
        return Err(format!(
            "{} is missing (scripts/install-peers.sh)",
            python.display()
        ));
    }
    let before: (PathBuf, Option<&str>, String) = match std::env::var_os("LOAD_BEFORE_GATEWAY") {
        Some(p) => (
            PathBuf::from(p),
            None,
            "before (LOAD_BEFORE_GATEWAY)".into(),
        ),
        None => (
            gateway.to_owned(),
            Some("client"),
            "before: sessions = \"client\"".into(),
        ),
    };
    let after: (PathBuf, Option<&str>, String) = (
        gateway.to_owned(),
        None,
        "after: sessions = \"shared\"".into(),
    );
    let mut points = Vec::new();
    for pattern in [Pattern::Reused, Pattern::Claude, Pattern::ChatGpt] {
        for &c in concs {
            for (program, sessions, label) in [&before, &after] {
                let gw = start(program, "gateway-hosts", &python, &server, *sessions, logs).await?;
                let p = point(&gw, label, pattern, c, calls, secs).await;
                println!("{}", line(&p));
                points.push(p);
                gw.stop().await;
            }
        }
    }
    Ok(points)
}

pub fn line(p: &HostPoint) -> String {
    format!(
        "hosts | {} | {} | c={} | {} calls, {} errors | {:.0}/s | p50 {:.0} µs | p99 {:.0} µs | {} processes | gateway {:.1} MiB, children {:.1} MiB{}",
        p.pattern,
        p.gateway,
        p.concurrency,
        p.calls,
        p.errors,
        p.per_sec,
        p.p50_us,
        p.p99_us,
        p.processes,
        p.gateway_rss_kib as f64 / 1024.0,
        p.children_rss_kib as f64 / 1024.0,
        p.first_error
            .as_deref()
            .map(|e| format!(
                " (first error: {})",
                e.chars().take(160).collect::<String>()
            ))
            .unwrap_or_default()
    )
}

/// The scenario's table, in Markdown.
pub fn table(points: &[HostPoint]) -> String {
    let mut out = String::from(
        "| pattern | gateway | c | calls | errors | calls/s | p50 µs | p99 µs | processes started | gateway RSS MiB | children RSS MiB |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for p in points {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {:.1} | {:.1} |\n",
            p.pattern,
            p.gateway,
            p.concurrency,
            p.calls,
            p.errors,
            p.per_sec,
            p.p50_us,
            p.p99_us,
            p.processes,
            p.gateway_rss_kib as f64 / 1024.0,
            p.children_rss_kib as f64 / 1024.0
        ));
    }
    out
}
