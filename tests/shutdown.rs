//! Graceful shutdown of the real binary on SIGTERM and SIGINT: new
//! connections are refused, the call in flight completes, the GET stream
//! ends, stdio children are gone and the exit status is 0; a call longer
//! than the grace period is cut at the grace.

use std::process::Command;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use support::clients::{open_session, open_sse, post_json};
use support::process::{self, Proc, Stream, alive, endpoint_url, stdio_children};

use crate::support;

/// Bound on every wait; a failing test fails within it rather than hanging.
const BOUND: Duration = Duration::from_secs(30);

struct Gateway {
    /// Killed, with its stdio children, when dropped.
    proc: Proc,
    url: String,
    _dir: tempfile::TempDir,
}

/// The binary in front of the stdio fixture, with `grace` seconds of grace,
/// run from an empty directory (no config file, no overlays).
fn start(grace: u64) -> Gateway {
    start_with(grace, &[])
}

/// [`start`], with more `serve` flags.
fn start_with(grace: u64, flags: &[&str]) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--name", "fixture"])
        .args(flags)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_mcp-fixture-server"))
        .current_dir(dir.path())
        .env("MCP_UI_GATEWAY_SHUTDOWN_GRACE_SECS", grace.to_string())
        .env("RUST_LOG", "info");
    let mut proc = Proc::spawn("gateway", &mut cmd);
    let url = proc.wait_for("its endpoint", BOUND, |stream, line| {
        endpoint_url(line).filter(|_| stream == Stream::Stdout)
    });
    Gateway {
        proc,
        url,
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

/// Sends `sig` to `pid`; kill(1) must succeed.
fn signal(pid: u32, sig: &str) {
    assert!(process::signal(sig, &[pid]), "kill -{sig} {pid}");
}

/// Wait for the exit, bounded; the status.
fn wait_exit(proc: &mut Proc, bound: Duration) -> std::process::ExitStatus {
    proc.wait_exit(bound)
        .unwrap_or_else(|| panic!("the gateway did not exit within {bound:?}"))
}

async fn drains_on(sig: &str) {
    let mut g = start(10);
    let pid = g.proc.pid;
    let sid = open_session(&g.url, "shutdown-test").await;
    let kids = stdio_children(pid);
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
    let status = wait_exit(&mut g.proc, BOUND);
    assert!(status.success(), "exit {status}\n{}", g.proc.stderr());
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
    let pid = g.proc.pid;
    let sid = open_session(&g.url, "shutdown-test").await;
    let kids = stdio_children(pid);
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
            if g.proc.try_wait().is_some() {
                break false;
            }
            if std::net::TcpStream::connect(&addr).is_err() {
                break g.proc.try_wait().is_none();
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
        let s = wait_exit(&mut g.proc, BOUND);
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
    // The log said what the shutdown waited for.
    let log = status.1.proc.stderr();
    let waiting = log
        .lines()
        .find(|l| l.contains("waiting for requests in flight to finish"));
    assert!(
        waiting.is_some_and(|l| l.contains("requests=1") && l.contains("connections=1")),
        "{log}"
    );
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
    let pid = g.proc.pid;
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
    // once: the stdio child they share (`sessions = "shared"`, the default)
    // answers whichever thread the request arrived on, each call's answer
    // reaching its own client although their ids are the same.
    let sessions =
        futures_util::future::join_all((0..6).map(|_| open_session(&g.url, "shutdown-test"))).await;
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
    let kids = stdio_children(pid);
    assert_eq!(
        kids.len(),
        1,
        "one stdio child for the six sessions: {kids:?}"
    );
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
    let status = wait_exit(&mut g.proc, BOUND);
    assert!(status.success(), "exit {status}\n{}", g.proc.stderr());
    for kid in kids {
        assert!(!alive(kid), "stdio child {kid} outlived the gateway");
    }
}
