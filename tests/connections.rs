//! Client connections under hostile or careless clients: a head that never
//! completes, a silent connection, a body trickling in, idle keep-alive
//! connections over HTTP/1.1 and HTTP/2, the connection cap (idle ones
//! closed first, 503 when all are busy), the cap derived from the file
//! limit of the real binary, and a shutdown that idle connections do not
//! hold up.

use std::process::Command;
use std::time::{Duration, Instant};

use support::gateway::{TestGateway, demo_stdio, test_config};
use support::process::{Proc, Stream, endpoint_url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support;

/// Bound on every wait; a failing test fails within it rather than hanging.
const BOUND: Duration = Duration::from_secs(30);

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// A gateway in front of the demo (never started by these tests) with
/// these connection limits.
async fn gateway(header_secs: u64, idle_secs: u64, max: Option<usize>) -> TestGateway {
    let mut config = test_config();
    config.upstreams = vec![demo_stdio("demo")];
    config.limits.header_read_timeout_secs = header_secs;
    config.limits.idle_connection_secs = idle_secs;
    config.limits.max_connections = max;
    TestGateway::start_with(config).await
}

/// How long until the peer closes `s` (end of input or a reset), reading
/// and dropping whatever it sends first; `None` if still open at `bound`.
async fn closed_within(s: &mut TcpStream, bound: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        let left = bound.checked_sub(start.elapsed())?;
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

/// One keep-alive request's answer on `s`: its status line and body.
async fn exchange(s: &mut TcpStream, request: &[u8]) -> String {
    s.write_all(request).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + BOUND;
    // /healthz and the gateway's own refusals are short, with a length.
    loop {
        let n = tokio::time::timeout_at(deadline.into(), s.read(&mut buf))
            .await
            .expect("an answer in time")
            .unwrap();
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if n == 0 {
            return text.into_owned();
        }
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if body.len() >= len {
                return text.into_owned();
            }
        }
    }
}

async fn healthz_answers(addr: std::net::SocketAddr) -> bool {
    let answered = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        Some(exchange(&mut s, HEALTHZ).await)
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(5), answered).await,
        Ok(Some(a)) if a.starts_with("HTTP/1.1 200")
    )
}

#[tokio::test]
async fn a_silent_connection_and_an_unfinished_head_are_closed_at_the_header_timeout() {
    let gw = gateway(1, 60, None).await;
    let mut silent = TcpStream::connect(gw.addr).await.unwrap();
    let mut partial = TcpStream::connect(gw.addr).await.unwrap();
    partial
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    // A byte a while keeps the head "in progress" but never completes it.
    let drip = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if partial.write_all(b"a").await.is_err() {
                return Some(());
            }
        }
        None
    });
    let closed = closed_within(&mut silent, BOUND).await;
    assert!(
        closed.is_some_and(|t| t >= Duration::from_millis(900)),
        "the silent connection closed after {closed:?}"
    );
    let dripped = tokio::time::timeout(BOUND, drip).await.unwrap().unwrap();
    assert_eq!(
        dripped,
        Some(()),
        "a head dripping for 4 s outlived a 1 s header timeout"
    );
    assert!(healthz_answers(gw.addr).await);
}

#[tokio::test]
async fn a_head_larger_than_max_header_bytes_is_refused_not_buffered() {
    let mut config = test_config();
    config.upstreams = vec![demo_stdio("demo")];
    config.limits.max_header_bytes = 16 * 1024;
    let gw = TestGateway::start_with(config).await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    let mut head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ".to_vec();
    head.resize(100 * 1024, b'a');
    // The gateway stops reading at the limit: the rest may not be taken.
    let _ = tokio::time::timeout(Duration::from_secs(5), s.write_all(&head)).await;
    let mut got = Vec::new();
    let _ = tokio::time::timeout(BOUND, s.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 431"),
        "a 100 KiB head under a 16 KiB limit: {text:?}"
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_outlives_the_header_timeout_then_closes() {
    let gw = gateway(1, 3, None).await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    assert!(exchange(&mut s, HEALTHZ).await.starts_with("HTTP/1.1 200"));
    // Idle longer than the header timeout: still open.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(exchange(&mut s, HEALTHZ).await.starts_with("HTTP/1.1 200"));
    let closed = closed_within(&mut s, BOUND).await;
    assert!(
        closed.is_some_and(|t| t >= Duration::from_millis(2500)),
        "idle for 3 s: closed after {closed:?}"
    );
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_at_the_idle_limit_not_the_header_one() {
    let gw = gateway(1, 3, None).await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    // The client preface and an empty SETTINGS frame, then nothing.
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let closed = closed_within(&mut s, BOUND).await;
    assert!(
        closed.is_some_and(|t| t >= Duration::from_millis(2500)),
        "an idle HTTP/2 connection closed after {closed:?} (idle limit 3 s)"
    );
}

#[tokio::test]
async fn a_body_trickling_below_the_floor_rate_gets_408() {
    let gw = gateway(1, 60, None).await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{\"a\":",
    )
    .await
    .unwrap();
    let start = Instant::now();
    let (mut rd, mut wr) = s.into_split();
    let drip = tokio::spawn(async move {
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if wr.write_all(b" ").await.is_err() {
                return;
            }
        }
    });
    let mut got = Vec::new();
    let _ = tokio::time::timeout(BOUND, rd.read_to_end(&mut got)).await;
    drip.abort();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("limits.header_read_timeout_secs"), "{text}");
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "answered after {:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn at_the_cap_idle_connections_make_room_and_busy_ones_do_not() {
    let gw = gateway(10, 60, Some(20)).await;
    let mut idle = Vec::new();
    for _ in 0..30 {
        let mut s = TcpStream::connect(gw.addr).await.unwrap();
        assert!(exchange(&mut s, HEALTHZ).await.starts_with("HTTP/1.1 200"));
        idle.push(s);
    }
    // Thirty served, twenty allowed: the ten that waited longest are gone.
    let mut closed = 0;
    for s in &mut idle {
        if closed_within(s, Duration::from_millis(200)).await.is_some() {
            closed += 1;
        }
    }
    assert!(
        closed >= 10,
        "{closed} of 30 idle connections closed at a cap of 20"
    );
    assert!(
        healthz_answers(gw.addr).await,
        "a new client is served at the cap"
    );
    drop(idle);

    // Every place busy (bodies still arriving): a new client gets 503.
    let gw = gateway(10, 60, Some(2)).await;
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(gw.addr).await.unwrap();
        s.write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{",
        )
        .await
        .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(BOUND, s.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("limits.max_connections"), "{text}");
}

/// The real binary (under `ulimit -n NOFILE` when given), serving the
/// bundled demo from an empty directory; its address.
fn binary_under_ulimit(
    nofile: Option<u32>,
    grace_secs: u64,
) -> (Proc, std::net::SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let limit = nofile
        .map(|n| format!("ulimit -n {n} && "))
        .unwrap_or_default();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{limit}exec \"$0\" serve --listen 127.0.0.1:0"))
        .arg(env!("CARGO_BIN_EXE_mcp-ui-gateway"))
        .env("MCP_UI_GATEWAY_SHUTDOWN_GRACE_SECS", grace_secs.to_string())
        .current_dir(dir.path())
        .env("RUST_LOG", "info");
    let mut proc = Proc::spawn("gateway", &mut cmd);
    let url = proc.wait_for("its endpoint", BOUND, |stream, line| {
        endpoint_url(line).filter(|_| stream == Stream::Stdout)
    });
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .expect("a loopback address");
    (proc, addr, dir)
}

#[tokio::test]
async fn under_a_low_file_limit_idle_connections_do_not_lock_out_new_clients() {
    let (mut proc, addr, _dir) = binary_under_ulimit(Some(256), 5);
    // The log so far (its lines may have gone by while the endpoint was
    // looked for): the limit raised and the cap derived from it.
    let deadline = Instant::now() + BOUND;
    let log = loop {
        let log = proc.stderr();
        if log.contains("mcp-ui-gateway serving") || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let served = log.lines().find(|l| l.contains("mcp-ui-gateway serving"));
    assert!(
        served.is_some_and(|l| l.contains("max_connections=64")),
        "{log}"
    );
    let fds = log.lines().find(|l| l.contains("open file limit"));
    assert!(fds.is_some_and(|l| l.contains("soft=256")), "{log}");
    // Three hundred idle keep-alive connections: more than the process
    // has descriptors for.
    let mut idle = Vec::new();
    for _ in 0..300 {
        let Ok(Ok(mut s)) =
            tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await
        else {
            panic!("connecting timed out after {} connections", idle.len());
        };
        let _ = s.write_all(HEALTHZ).await;
        idle.push(s);
    }
    let start = Instant::now();
    assert!(healthz_answers(addr).await, "/healthz at 300 connections");
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(idle);
    let failures = proc.stderr().matches("accept failed").count()
        + proc.stdout().matches("accept failed").count();
    assert!(failures <= 2, "{failures} accept failures logged");
    let _ = proc.terminate_async(BOUND).await;
}

#[tokio::test]
async fn idle_and_unfinished_connections_do_not_hold_shutdown() {
    let (mut proc, addr, _dir) = binary_under_ulimit(None, 30);
    let mut held = Vec::new();
    for i in 0..40 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 0 {
            assert!(exchange(&mut s, HEALTHZ).await.starts_with("HTTP/1.1 200"));
        } else {
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 1")
                .await
                .unwrap();
        }
        held.push(s);
    }
    let start = Instant::now();
    let status = proc.terminate_async(BOUND).await.expect("exits");
    assert!(status.success(), "{status}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "40 idle connections held a 30 s grace for {:?}",
        start.elapsed()
    );
}
