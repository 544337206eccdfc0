//! Graceful shutdown of the real binary on SIGTERM and SIGINT: new
//! connections are refused, the call in flight completes, the GET stream
//! ends, stdio children are gone and the exit status is 0; a call longer
//! than the grace period is cut at the grace.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use support::clients::{open_sse, post_json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"shutdown-test","version":"1"}}}"#;
/// Bound on every wait; a failing test fails within it rather than hanging.
const BOUND: Duration = Duration::from_secs(30);

struct Gateway {
    child: Child,
    url: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary in front of the stdio fixture, with `grace` seconds of grace,
/// run from an empty directory (no config file, no overlays).
fn start(grace: u64) -> Gateway {
    start_with(grace, &[])
}

/// [`start`], with more `serve` flags.
fn start_with(grace: u64, flags: &[&str]) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"))
        .args(["serve", "--listen", "127.0.0.1:0", "--name", "fixture"])
        .args(flags)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_mcp-fixture-server"))
        .current_dir(dir.path())
        .env("MCP_UI_GATEWAY_SHUTDOWN_GRACE_SECS", grace.to_string())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the gateway");
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    {
        let pipe = child.stderr.take().unwrap();
        let stderr = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = stderr.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
    }
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            panic!("the gateway exited before printing its endpoint");
        }
        if let Some(rest) = line.trim().strip_prefix("MCP endpoint: ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in stdout.lines() {});
    Gateway {
        child,
        url,
        stderr,
        _dir: dir,
    }
}

/// A `slow` call of `ms` milliseconds on session `sid`, in the background.
fn spawn_slow_call(
    url: &str,
    sid: &str,
    ms: u64,
) -> tokio::task::JoinHandle<(StatusCode, hyper::HeaderMap, bytes::Bytes)> {
    let (url, sid) = (url.to_owned(), sid.to_owned());
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{{"name":"slow","arguments":{{"ms":{ms}}}}}}}"#
    );
    tokio::spawn(async move { post_json(&url, &[("mcp-session-id", &sid)], body).await })
}

/// Processes whose parent is `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            found.push(child);
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Wait for the exit, bounded; the status.
fn wait_exit(child: &mut Child, bound: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway did not exit within {bound:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn open_session(url: &str) -> String {
    let (status, headers, body) = post_json(url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, _) = post_json(
        url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    sid
}

async fn drains_on(sig: &str) {
    let mut g = start(10);
    let pid = g.child.id();
    let sid = open_session(&g.url).await;
    let kids = children_of(pid);
    assert_eq!(kids.len(), 1, "one stdio child per session: {kids:?}");

    // An open GET stream...
    let (status, _, mut get) = open_sse(
        Method::GET,
        &g.url,
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        "",
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    // ...and a call in flight: its first progress event proves it started.
    let (status, _, mut call) = open_sse(
        Method::POST,
        &g.url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-session-id", &sid),
        ],
        r#"{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","arguments":{"steps":100},"_meta":{"progressToken":"t"}}}"#,
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let first = call.next_event(BOUND).await.unwrap().unwrap();
    assert!(first.data.contains("notifications/progress"), "{first:?}");

    signal(pid, sig);

    // The call completes with its result.
    let mut result = None;
    while let Some(ev) = call.next_event(BOUND).await.unwrap() {
        if ev.data.contains("\"id\":\"p\"") {
            result = Some(ev.data);
        }
    }
    let result = result.expect("the call in flight completed");
    assert!(result.contains("completed 100 steps"), "{result}");
    // The GET stream ends.
    let deadline = Instant::now() + BOUND;
    while let Ok(Some(_)) = get.next_event(BOUND).await {
        assert!(Instant::now() < deadline, "the GET stream did not end");
    }
    let status = wait_exit(&mut g.child, BOUND);
    assert!(
        status.success(),
        "exit {status}\n{}",
        g.stderr.lock().unwrap()
    );
    // New connections are refused once it is gone, and the children with it.
    let addr = g
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "still accepting"
    );
    for kid in kids {
        assert!(!alive(kid), "stdio child {kid} outlived the gateway");
    }
}

#[tokio::test]
async fn sigterm_lets_the_call_in_flight_finish_and_exits_0() {
    drains_on("TERM").await;
}

#[tokio::test]
async fn sigint_lets_the_call_in_flight_finish_and_exits_0() {
    drains_on("INT").await;
}

#[tokio::test]
async fn a_call_longer_than_the_grace_is_cut_at_the_grace() {
    let mut g = start(2);
    let pid = g.child.id();
    let sid = open_session(&g.url).await;
    let kids = children_of(pid);
    let call = spawn_slow_call(&g.url, &sid, 50_000);
    // Give the call time to reach the upstream (not a measurement: either
    // way, it must not outlive the grace).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let signalled = Instant::now();
    signal(pid, "TERM");
    // While the call drains, new connections are refused.
    let addr = g
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let refused_while_draining = {
        let deadline = Instant::now() + BOUND;
        loop {
            if g.child.try_wait().unwrap().is_some() {
                break false;
            }
            if std::net::TcpStream::connect(&addr).is_err() {
                break g.child.try_wait().unwrap().is_none();
            }
            assert!(Instant::now() < deadline, "still accepting");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    assert!(
        refused_while_draining,
        "new connections were not refused during the grace period"
    );
    let status = tokio::task::spawn_blocking(move || {
        let s = wait_exit(&mut g.child, BOUND);
        (s, g)
    })
    .await
    .unwrap();
    let waited = signalled.elapsed();
    assert!(status.0.success(), "exit {}", status.0);
    assert!(
        waited < Duration::from_secs(20),
        "exit took {waited:?}, the call asked for 50 s"
    );
    // The call is answered at the grace with an error naming the upstream.
    let (code, _, body) = tokio::time::timeout(BOUND, call).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&body);
    assert_eq!(code, StatusCode::OK, "{text}");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["id"], "s", "{text}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("upstream 'fixture'") && message.contains("shutting down"),
        "{text}"
    );
    for kid in kids {
        assert!(!alive(kid), "stdio child {kid} outlived the gateway");
    }
}

/// The threads of process `pid`, by name.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

#[tokio::test]
async fn several_workers_serve_sessions_from_any_connection_and_drain_together() {
    let mut g = start_with(10, &["--workers", "3"]);
    let pid = g.child.id();
    // The workers start as the endpoint is printed.
    let deadline = Instant::now() + BOUND;
    let mut names = thread_names(pid);
    while !["worker-1", "worker-2"]
        .iter()
        .all(|w| names.iter().any(|n| n == w))
    {
        assert!(Instant::now() < deadline, "threads: {names:?}");
        std::thread::sleep(Duration::from_millis(20));
        names = thread_names(pid);
    }
    // Sessions opened at once, each then called from many connections at
    // once: a session's stdio child answers whichever thread the request
    // arrived on.
    let sessions = futures_util::future::join_all((0..6).map(|_| open_session(&g.url))).await;
    let url = g.url.clone();
    let calls = sessions.iter().flat_map(|sid| {
        let url = url.clone();
        (0..4).map(move |i| {
            let url = url.clone();
            let sid = sid.clone();
            async move {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"slow","arguments":{{"ms":300}}}}}}"#
                );
                post_json(&url, &[("mcp-session-id", &sid)], body).await
            }
        })
    });
    for (status, _, body) in futures_util::future::join_all(calls).await {
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(text.contains("\"result\""), "{text}");
    }
    let kids = children_of(pid);
    assert_eq!(kids.len(), 6, "one stdio child per session: {kids:?}");
    // Calls in flight on several connections when the signal comes all
    // finish, then the process exits 0 with its children gone.
    let slow: Vec<_> = sessions
        .iter()
        .map(|sid| spawn_slow_call(&g.url, sid, 1500))
        .collect();
    // Time for the calls to reach their children (not a measurement).
    tokio::time::sleep(Duration::from_millis(500)).await;
    signal(pid, "TERM");
    for call in slow {
        let (status, _, body) = call.await.unwrap();
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(text.contains("\"result\""), "{text}");
    }
    let status = wait_exit(&mut g.child, BOUND);
    assert!(
        status.success(),
        "exit {status}\n{}",
        g.stderr.lock().unwrap()
    );
    for kid in kids {
        assert!(!alive(kid), "stdio child {kid} outlived the gateway");
    }
}
