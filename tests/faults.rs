//! Upstream faults and limits: each fault gives the affected request a clear
//! error within a bounded time, and a healthy mount of the same gateway keeps
//! serving throughout. Faulty HTTP upstreams are tiny raw TCP servers on
//! 127.0.0.1; faulty stdio upstreams are `sh -c` one-liners.

mod support;

use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use support::clients::{body_json, error_message, open_sse, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::process::copy_dir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"faults-test","version":"1"}}}"#;
const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}"#;
/// Every affected request must be answered within this.
const BOUND: Duration = Duration::from_secs(15);

/// A gateway with the faulty upstream at /bad/mcp and the demo (stdio) at
/// /good/mcp, short timeouts.
async fn gateway_with(bad: mcp_ui_gateway::config::UpstreamConfig) -> TestGateway {
    gateway_tuned(bad, |_| {}).await
}

async fn gateway_tuned(
    bad: mcp_ui_gateway::config::UpstreamConfig,
    tune: impl FnOnce(&mut mcp_ui_gateway::config::Config),
) -> TestGateway {
    let mut config = gw::test_config();
    config.limits.request_timeout_secs = 2;
    config.limits.connect_timeout_secs = 2;
    config.upstreams = vec![bad, gw::demo_stdio("good")];
    tune(&mut config);
    TestGateway::start_with(config).await
}

/// The healthy mount answers a fresh session's initialize.
async fn assert_good_serves(g: &TestGateway) {
    let (status, headers, body) = post_json(&g.url_for("/good/mcp"), &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(headers.contains_key("mcp-session-id"));
    assert_eq!(
        body_json(&body)["result"]["serverInfo"]["name"],
        "task-list-demo"
    );
}

/// POST `INIT` to the faulty mount: the error message, checked to come in time.
async fn bad_init(g: &TestGateway) -> (StatusCode, String) {
    let started = Instant::now();
    let (status, _, body) = post_json(&g.url_for("/bad/mcp"), &[], INIT).await;
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    (status, error_message(&body))
}

// === faulty HTTP upstreams ===

/// Reads one request head (and a Content-Length body) from `s`; what was read.
async fn read_request(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = s.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// A raw upstream on 127.0.0.1 that answers every request with `act`.
async fn raw_upstream<F, Fut>(act: F) -> (String, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    raw_upstream_reading(move |s, _| act(s)).await
}

/// [`raw_upstream`], `act` also given the request as read.
async fn raw_upstream_reading<F, Fut>(act: F) -> (String, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let act = std::sync::Arc::new(act);
        while let Ok((mut s, _)) = listener.accept().await {
            let act = act.clone();
            tokio::spawn(async move {
                let request = read_request(&mut s).await;
                act(s, request).await;
            });
        }
    });
    (url, task)
}

#[tokio::test]
async fn http_upstream_refusing_connections() {
    // Nobody listens there (held to the end, so nobody can).
    let closed = support::process::ClosedPort::new();
    let port = closed.port();
    let g = gateway_with(gw::http("bad", &format!("http://127.0.0.1:{port}/mcp"))).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' is unreachable"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_hanging_times_out() {
    let (url, _task) = raw_upstream(|s| async move {
        // Holds the connection open and never answers.
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(s);
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' did not answer within 2 s"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_answering_garbage() {
    let (url, _task) = raw_upstream(|mut s| async move {
        let _ = s
            .write_all(b"SSH-2.0-OpenSSH_9.6 not http at all\r\n\r\n")
            .await;
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' sent an invalid reply: its answer is not HTTP"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_answering_the_wrong_content_type() {
    let (url, _task) = raw_upstream(|mut s| async move {
        let page = "<html><body>502 from some proxy</body></html>";
        let _ = s
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            )
            .await;
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' sent an invalid reply") && message.contains("text/html"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

// === HTTP upstreams that stall after their answer's head ===

/// An upstream that answers `initialize` normally; to anything else it sends
/// a JSON answer's head and then stalls for a minute: `ping` after a
/// `Content-Length` and no body, the rest after the first bytes of a chunked
/// body, trickling a byte every 100 ms when the request names `trickle` or
/// is a `resources/list`.
async fn stalling_upstream() -> (String, tokio::task::JoinHandle<()>) {
    raw_upstream_reading(|mut s, request| async move {
        let head = |framing: &str| {
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{framing}\r\n")
        };
        if request.contains("\"initialize\"") {
            let framing = format!(
                "connection: close\r\ncontent-length: {}\r\n",
                INIT_RESULT.len()
            );
            let _ = s
                .write_all(format!("{}{INIT_RESULT}", head(&framing)).as_bytes())
                .await;
            return;
        }
        let trickle = request.contains("trickle") || request.contains("resources/list");
        let start = if request.contains("\"ping\"") {
            head("content-length: 100\r\n")
        } else {
            let first = r#"{"jsonrpc":"2.0","id":2,"result":{"#;
            let framing = head("transfer-encoding: chunked\r\n");
            format!("{framing}{:x}\r\n{first}\r\n", first.len())
        };
        let _ = s.write_all(start.as_bytes()).await;
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if trickle && s.write_all(b"1\r\n \r\n").await.is_err() {
                return;
            }
        }
    })
    .await
}

/// POSTs `body` on a connection of its own and reads until the gateway
/// closes it: how long that took, and what came.
async fn post_until_closed(g: &TestGateway, path: &str, body: &str) -> (Duration, String) {
    let started = Instant::now();
    let mut s = TcpStream::connect(g.addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        g.addr,
        body.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(BOUND, s.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "still open after {BOUND:?}: {}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    (
        started.elapsed(),
        String::from_utf8_lossy(&got).into_owned(),
    )
}

#[tokio::test]
async fn http_upstream_stalling_after_the_head_times_out_every_kind_of_answer() {
    let (url, _task) = stalling_upstream().await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let bad = g.url_for("/bad/mcp");
    let (status, _, body) = post_json(&bad, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body_json(&body)["result"]["serverInfo"]["name"], "sh");
    // An answer the gateway reads whole (a tool result, looked into for
    // in-band challenges) and one it passes through (ping) with nothing of
    // its body come yet: a JSON-RPC error for the request at the deadline.
    let timed_error = |id: u64, body: String| {
        let bad = bad.clone();
        async move {
            let started = Instant::now();
            let (status, _, answer) = post_json(&bad, &[], body).await;
            (id, started.elapsed(), status, answer)
        }
    };
    let call = |id: u64, name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
        )
    };
    let list = r#"{"jsonrpc":"2.0","id":5,"method":"resources/list"}"#;
    let (stalled, trickled, ping, cut) = tokio::join!(
        timed_error(2, call(2, "stall")),
        timed_error(3, call(3, "trickle")),
        timed_error(4, r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#.into()),
        // A body passed through whose first bytes went out: cut at the
        // deadline, since they cannot be taken back.
        post_until_closed(&g, "/bad/mcp", list),
    );
    for (id, took, status, answer) in [stalled, trickled, ping] {
        assert_eq!(status, StatusCode::OK, "request {id}");
        let v = body_json(&answer);
        assert_eq!(v["id"], id, "{v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("upstream 'bad' did not answer within 2 s"),
            "request {id}: {message}"
        );
        assert!(
            took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
            "request {id} took {took:?}"
        );
    }
    let (took, got) = cut;
    assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    assert!(
        got.contains(r#"{"jsonrpc":"2.0","id":2,"result":{"#),
        "{got}"
    );
    assert!(
        !got.ends_with("0\r\n\r\n"),
        "the body was cut, not ended: {got}"
    );
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "the trickling answer was cut after {took:?}"
    );
    assert_good_serves(&g).await;
}

// === the memory budget of buffered answers ===

/// Answers every `tools/call` with a JSON result of `len` bytes, its head
/// (with the length) at once and its body once `release` is true; a call of
/// the tool `hold` never gets its body.
async fn big_answers(
    len: usize,
    release: tokio::sync::watch::Receiver<bool>,
) -> (String, tokio::task::JoinHandle<()>) {
    raw_upstream_reading(move |mut s, request| {
        let mut release = release.clone();
        async move {
            let body = request.split("\r\n\r\n").nth(1).unwrap_or_default();
            let id = body_json(body.as_bytes())["id"].clone();
            let prefix = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            );
            let suffix = r#""}]}}"#;
            let text = "x".repeat(len - prefix.len() - suffix.len());
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
            );
            if s.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            if request.contains("\"hold\"") {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
            if release.wait_for(|r| *r).await.is_err() {
                return;
            }
            let _ = s
                .write_all(format!("{prefix}{text}{suffix}").as_bytes())
                .await;
        }
    })
    .await
}

#[tokio::test]
async fn buffered_answers_over_the_memory_budget_are_refused_naming_it() {
    const ANSWER: usize = 1_000_000;
    let (release, released) = tokio::sync::watch::channel(false);
    let (url, _task) = big_answers(ANSWER, released).await;
    let g = gateway_tuned(gw::http("bad", &url), |c| {
        c.limits.max_buffered_bytes = 2_500_000;
    })
    .await;
    let bad = g.url_for("/bad/mcp");
    let call = |id: u64, name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
        )
    };
    let mut calls = tokio::task::JoinSet::new();
    for id in 1..=5 {
        let (bad, body) = (bad.clone(), call(id, "big"));
        calls.spawn(async move { post_json(&bad, &[], body).await });
    }
    // Two answers fit in 2.5 MB and wait for their bodies; the other three
    // are refused as soon as their length is known, before any body comes.
    let mut refused = Vec::new();
    for _ in 0..3 {
        let joined = tokio::time::timeout(BOUND, calls.join_next()).await;
        let (status, headers, body) = joined
            .expect("the answers over the budget are refused at once")
            .unwrap()
            .unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(headers["retry-after"], "1");
        let v = body_json(&body);
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("limits.max_buffered_bytes")
                && message.contains("2500000 bytes")
                && message.contains("upstream 'bad'"),
            "{message}"
        );
        refused.push(v["id"].as_u64().expect("the refused request's id"));
    }
    assert_eq!(g.gateway.buffers.in_use(), 2 * ANSWER, "two answers held");
    release.send_replace(true);
    let mut answered = Vec::new();
    while let Some(joined) = tokio::time::timeout(BOUND, calls.join_next())
        .await
        .expect("the answers within the budget come")
    {
        let (status, _, body) = joined.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body.len(), ANSWER, "passed whole");
        answered.push(body_json(&body)["id"].as_u64().unwrap());
    }
    refused.extend(&answered);
    refused.sort_unstable();
    assert_eq!(refused, [1, 2, 3, 4, 5]);
    assert_eq!(answered.len(), 2);
    let released =
        support::clients::wait_until(BOUND, || (g.gateway.buffers.in_use() == 0).then_some(()))
            .await;
    assert!(released.is_some(), "held: {}", g.gateway.buffers.in_use());
    // A client that goes away while its answer is held gives the bytes back.
    let abandoned = tokio::spawn({
        let (bad, body) = (bad.clone(), call(9, "hold"));
        async move { post_json(&bad, &[], body).await }
    });
    let held = support::clients::wait_until(BOUND, || {
        (g.gateway.buffers.in_use() == ANSWER).then_some(())
    })
    .await;
    assert!(held.is_some(), "held: {}", g.gateway.buffers.in_use());
    abandoned.abort();
    let released =
        support::clients::wait_until(BOUND, || (g.gateway.buffers.in_use() == 0).then_some(()))
            .await;
    assert!(released.is_some(), "held: {}", g.gateway.buffers.in_use());
    assert_good_serves(&g).await;
}

/// An upstream that answers a POST with an SSE stream, sends one whole event,
/// then (after half an event when `partial`) resets the connection.
async fn resetting_upstream(partial: bool) -> (String, tokio::task::JoinHandle<()>) {
    raw_upstream(move |mut s| async move {
        let _ = s
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
            )
            .await;
        let event = b"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n";
        let _ = s
            .write_all(format!("{:x}\r\n", event.len()).as_bytes())
            .await;
        let _ = s.write_all(event).await;
        let _ = s.write_all(b"\r\n").await;
        if partial {
            let _ = s.write_all(b"10\r\ndata: {\"jsonrpc\"").await;
        }
        let _ = s.flush().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Linger 0 turns the close into a reset.
        let _ = s.set_zero_linger();
        drop(s);
    })
    .await
}

/// POSTs `INIT` to /bad/mcp and reads the SSE answer: its first event and
/// what came after it until the stream ended.
async fn read_broken_stream(g: &TestGateway) -> (support::clients::SseEvent, Vec<String>) {
    let started = Instant::now();
    let (status, _, mut reader) = open_sse(
        Method::POST,
        &g.url_for("/bad/mcp"),
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        INIT,
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let first = reader.next_event(BOUND).await.unwrap().unwrap();
    let mut rest = Vec::new();
    for _ in 0..4 {
        match reader.next_event(BOUND).await {
            Ok(Some(ev)) => rest.push(ev.data),
            Ok(None) => break,
            Err(e) => {
                rest.push(format!("(stream error: {e})"));
                break;
            }
        }
    }
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    (first, rest)
}

#[tokio::test]
async fn http_upstream_resetting_mid_sse_fails_that_request_with_an_error_event() {
    let (url, _task) = resetting_upstream(false).await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (first, rest) = read_broken_stream(&g).await;
    assert_eq!(first.id.as_deref(), Some("1"), "the complete event passes");
    assert_eq!(rest.len(), 1, "{rest:?}");
    let v = body_json(rest[0].as_bytes());
    assert_eq!(v["id"], 1, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("upstream 'bad' stream failed"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_resetting_mid_event_cuts_the_stream() {
    let (url, _task) = resetting_upstream(true).await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (first, rest) = read_broken_stream(&g).await;
    assert_eq!(first.id.as_deref(), Some("1"), "the complete event passes");
    // Half an event cannot be taken back: the stream is cut, never completed
    // with the half event.
    assert!(
        rest.iter().all(|r| r.starts_with("(stream error")),
        "{rest:?}"
    );
    assert_good_serves(&g).await;
}

// === faulty stdio upstreams ===

#[tokio::test]
async fn stdio_child_exiting_at_start_backs_off_and_reports_it() {
    let g = gateway_with(gw::stdio("bad", "sh", &["-c", "exit 3"])).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad'") && message.contains("exit status: 3"),
        "{message}"
    );
    // The crash is on record; a request now is refused at once, naming the wait.
    let faults = support::clients::wait_until(BOUND, || {
        let f = g.gateway.upstream_faults();
        (!f.is_empty()).then_some(f)
    })
    .await
    .expect("the crash is reported");
    assert_eq!(faults[0].0, "bad");
    assert_eq!(faults[0].1.crashes, 1);
    assert!(faults[0].1.last.contains("exit status: 3"), "{faults:?}");
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    if message.contains("keeps crashing") {
        assert!(
            message.contains("next start allowed in") && message.contains("upstream 'bad'"),
            "{message}"
        );
    }
    // After the wait, the next start is tried and fails again: the record grows.
    let grew = support::clients::wait_until(BOUND, || {
        let f = g.gateway.upstream_faults();
        if f[0].1.retry_in.is_none() {
            return Some(());
        }
        None
    })
    .await;
    assert!(grew.is_some(), "the backoff ended");
    let (_, message) = bad_init(&g).await;
    assert!(message.contains("exit status: 3"), "{message}");
    let crashes = support::clients::wait_until(BOUND, || {
        let f = g.gateway.upstream_faults();
        (f[0].1.crashes >= 2).then_some(f[0].1.crashes)
    })
    .await;
    assert!(crashes.is_some(), "the next crash is on record");
    assert_good_serves(&g).await;
}

/// A child that exits at start says why on its stderr (a Python module
/// misspelt): the client's error and `/readyz` carry its last lines, not
/// only the exit status.
#[tokio::test]
async fn stdio_child_exiting_at_start_is_reported_with_its_last_stderr_lines() {
    let script = "echo 'Traceback (most recent call last):' >&2; \
        echo \"ModuleNotFoundError: No module named 'mcp_server_tim'\" >&2; exit 1";
    let g = gateway_with(gw::stdio("bad", "sh", &["-c", script])).await;
    let said = "its stderr ended with: Traceback (most recent call last): | ModuleNotFoundError: No module named 'mcp_server_tim'";
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("exit status: 1") && message.contains(said),
        "{message}"
    );
    let (_, _, body) = request_raw(Method::GET, &g.url_for("/readyz"), &[], "").await;
    let readyz = String::from_utf8_lossy(&body);
    assert!(
        readyz.contains("No module named 'mcp_server_tim'"),
        "{readyz}"
    );
}

#[test]
fn backoff_doubles_from_half_a_second_to_thirty() {
    use mcp_ui_gateway::upstream::stdio::backoff;
    let waits: Vec<u64> = (1..=9).map(|n| backoff(n).as_millis() as u64).collect();
    assert_eq!(
        waits,
        [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
    );
    assert_eq!(backoff(u32::MAX).as_secs(), 30);
}

#[tokio::test]
async fn stdio_child_writing_non_json_is_a_timeout_not_a_hang() {
    let script = "while read l; do echo 'this is not JSON-RPC'; done";
    let g = gateway_with(gw::stdio("bad", "sh", &["-c", script])).await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad' did not answer within 2 s"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn stdio_child_mixing_noise_into_stdout_still_works() {
    let script = format!("read l; echo 'starting up...'; echo '{INIT_RESULT}'; cat >/dev/null");
    let g = gateway_with(gw::stdio("bad", "sh", &["-c", &script])).await;
    let (status, _, body) = post_json(&g.url_for("/bad/mcp"), &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body_json(&body)["result"]["serverInfo"]["name"], "sh");
}

#[tokio::test]
async fn stdio_child_flooding_stderr_keeps_working() {
    // About 4 MB on stderr before it answers: the gateway must keep reading it.
    let script = format!(
        "read l; yes 'stderr flood line' | head -n 250000 >&2; echo '{INIT_RESULT}'; cat >/dev/null"
    );
    let g = gateway_with(gw::stdio("bad", "sh", &["-c", &script])).await;
    let started = Instant::now();
    let (status, _, body) = post_json(&g.url_for("/bad/mcp"), &[], INIT).await;
    assert!(started.elapsed() < BOUND);
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body_json(&body)["result"]["serverInfo"]["name"], "sh");
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn stdio_message_over_the_limit_ends_that_session_only() {
    let script = "read l; head -c 4096 /dev/zero | tr '\\0' x; echo; cat >/dev/null";
    let g = gateway_tuned(gw::stdio("bad", "sh", &["-c", script]), |c| {
        c.limits.max_message_bytes = 1024;
    })
    .await;
    let (status, message) = bad_init(&g).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        message.contains("upstream 'bad'") && message.contains("limits.max_message_bytes"),
        "{message}"
    );
    assert_good_serves(&g).await;
}

/// Opens a session on the faulty mount (its script answers `INIT` first).
async fn bad_session(g: &TestGateway) -> String {
    let (status, headers, body) = post_json(&g.url_for("/bad/mcp"), &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    headers["mcp-session-id"].to_str().unwrap().to_owned()
}

/// Pings session `sid` of the faulty mount as request `id`: the status, the
/// body, and how long it took.
async fn bad_ping(g: &TestGateway, sid: &str, id: &str) -> (StatusCode, Vec<u8>, Duration) {
    let started = Instant::now();
    let body = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#);
    let (status, _, body) =
        post_json(&g.url_for("/bad/mcp"), &[("mcp-session-id", sid)], body).await;
    (status, body.to_vec(), started.elapsed())
}

#[tokio::test]
async fn stdio_child_closing_its_stdout_ends_its_connection_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // Answers initialize, reads the next message, closes stdout, runs on.
    let script = format!(
        "echo $$ > {}; read l; echo '{INIT_RESULT}'; read l; exec sleep 300 >&-",
        pids.display()
    );
    // A session that owns its child.
    let bad = gw::per_client(gw::stdio("bad", "sh", &["-c", &script]));
    let g = gateway_tuned(bad, |c| {
        c.limits.request_timeout_secs = 20;
    })
    .await;
    let sid = bad_session(&g).await;
    let (status, body, took) = bad_ping(&g, &sid, "p").await;
    assert_eq!(status, StatusCode::OK);
    let message = error_message(&body);
    assert!(
        message.contains("upstream 'bad'") && message.contains("closed its stdout"),
        "{message}"
    );
    eprintln!("closed stdout: error after {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "took {took:?} (the timeout is 20 s)"
    );
    // The child is gone; the session is not: its next request starts
    // another child (which does the same, and says so).
    let pid: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = support::process::wait_gone(vec![pid], BOUND);
    assert!(left.is_empty(), "the child is still running");
    let (status, body, _) = bad_ping(&g, &sid, "q").await;
    assert_eq!(status, StatusCode::OK);
    let message = error_message(&body);
    assert!(message.contains("upstream 'bad'"), "{message}");
    let again: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(again, pid, "a new child");
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn stdio_child_not_reading_its_stdin_bounds_the_queue_and_the_wait() {
    // Answers initialize, then never reads again.
    let script = format!("read l; echo '{INIT_RESULT}'; exec sleep 300");
    let g = gateway_with(gw::stdio("bad", "sh", &["-c", &script])).await;
    let sid = bad_session(&g).await;
    // 8 calls of 3 MB: the pipe takes part of the first, 16 MiB wait.
    let pad = "x".repeat(3 << 20);
    let calls = (0..8).map(|i| {
        let (url, sid) = (g.url_for("/bad/mcp"), sid.clone());
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping","params":{{"pad":"{pad}"}}}}"#);
        async move {
            let started = Instant::now();
            let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], body).await;
            (status, error_message(&body), started.elapsed())
        }
    });
    let answers = futures_util::future::join_all(calls).await;
    let mut refused = 0;
    for (status, message, took) in &answers {
        assert_eq!(*status, StatusCode::OK, "{message}");
        assert!(took < &Duration::from_secs(10), "{took:?}: {message}");
        if message.contains("is not reading its input") {
            assert!(message.starts_with("upstream 'bad'"), "{message}");
            refused += 1;
        } else {
            assert!(message.contains("did not answer within 2 s"), "{message}");
        }
    }
    eprintln!("stdin not read: {answers:?}");
    assert!(refused >= 2, "{answers:?}");
    // Their time ran out: the queue is empty again and takes a new message
    // (which waits its own timeout, the child still not reading).
    let (_, body, took) = bad_ping(&g, &sid, "after").await;
    let message = error_message(&body);
    assert!(message.contains("did not answer within 2 s"), "{message}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn stdio_child_is_told_of_a_request_that_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    // Answers initialize, reads a call without answering it, then keeps the
    // next line it reads.
    let script = format!(
        "read l; echo '{INIT_RESULT}'; read l; read l; printf '%s\\n' \"$l\" > {}; exec sleep 300",
        seen.display()
    );
    let g = gateway_with(gw::per_client(gw::stdio("bad", "sh", &["-c", &script]))).await;
    let sid = bad_session(&g).await;
    let (_, body, _) = bad_ping(&g, &sid, "slow").await;
    assert!(error_message(&body).contains("did not answer within 2 s"));
    let line = support::clients::wait_until(BOUND, || {
        std::fs::read_to_string(&seen)
            .ok()
            .filter(|t| t.ends_with('\n'))
    })
    .await
    .expect("the child read another line");
    let v = body_json(line.as_bytes());
    assert_eq!(v["method"], "notifications/cancelled", "{line}");
    assert_eq!(v["params"]["requestId"], "slow", "{line}");
    assert!(
        v["params"]["reason"]
            .as_str()
            .unwrap()
            .contains("no answer within 2 s"),
        "{line}"
    );
}

#[tokio::test]
async fn stdio_child_answering_invalid_utf8_fails_that_request_only() {
    // Initialize answered, then `a` with a byte that is not UTF-8, then `b`.
    let script = format!(
        r#"read l; echo '{INIT_RESULT}'; read l; printf '{{"jsonrpc":"2.0","id":"a","result":{{"t":"\377"}}}}\n'; read l; echo '{{"jsonrpc":"2.0","id":"b","result":{{}}}}'; cat >/dev/null"#
    );
    let bad = gw::per_client(gw::stdio("bad", "sh", &["-c", &script]));
    let g = gateway_tuned(bad, |c| {
        c.limits.request_timeout_secs = 20;
    })
    .await;
    let sid = bad_session(&g).await;
    let (status, body, took) = bad_ping(&g, &sid, "a").await;
    assert_eq!(status, StatusCode::OK);
    let v = body_json(&body);
    assert_eq!(v["id"], "a");
    let message = error_message(&body);
    assert!(
        message.starts_with("upstream 'bad' sent an invalid reply: its answer is not valid UTF-8"),
        "{message}"
    );
    eprintln!("invalid UTF-8: error after {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "took {took:?} (the timeout is 20 s)"
    );
    let (status, body, _) = bad_ping(&g, &sid, "b").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body_json(&body)["result"], serde_json::json!({}));
}

// === limits ===

#[tokio::test]
async fn stdio_children_are_capped() {
    // Sessions that each own their child.
    let mut config = gw::test_config();
    config.limits.max_stdio_children = 1;
    config.upstreams = vec![gw::per_client(gw::demo_stdio("demo"))];
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let (status, headers, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, body) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let message = error_message(&body);
    assert!(
        message.contains("limits.max_stdio_children") && message.contains("upstream 'demo'"),
        "{message}"
    );
    // The first session is unaffected; once it ends, its place is free again.
    let (status, _, _) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = request_raw(Method::DELETE, &url, &[("mcp-session-id", &sid)], "").await;
    assert_eq!(status, StatusCode::OK);
    let freed =
        support::clients::wait_until(BOUND, || (g.gateway.children.running() == 0).then_some(()))
            .await;
    assert!(freed.is_some(), "the child was not reaped");
    let (status, _, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn requests_in_flight_per_session_are_capped() {
    let mut config = gw::test_config();
    config.limits.max_in_flight_per_session = 1;
    config.upstreams = vec![gw::stdio(
        "fixture",
        env!("CARGO_BIN_EXE_mcp-fixture-server"),
        &[],
    )];
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let (status, headers, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, _) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let slow = {
        let url = url.clone();
        let sid = sid.clone();
        tokio::spawn(async move {
            post_json(
                &url,
                &[("mcp-session-id", &sid)],
                r#"{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{"ms":6000}}}"#,
            )
            .await
        })
    };
    let busy = support::clients::wait_until(BOUND, || {
        (g.gateway.in_flight.count(sid.as_bytes()) == 1).then_some(())
    })
    .await;
    assert!(busy.is_some(), "the slow call never started");
    let (status, headers, body) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":"second","method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "1");
    let v = body_json(&body);
    assert_eq!(v["id"], "second");
    assert!(
        error_message(&body).contains("limits.max_in_flight_per_session"),
        "{v}"
    );
    // Another session is not affected.
    let (status, _, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = slow.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains("slept 6000 ms"));
    let (status, _, _) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":"third","method":"ping"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn invalid_limits_name_their_field() {
    let mut config = gw::test_config();
    config.limits.max_in_flight_per_session = 0;
    config.limits.max_stdio_children = 0;
    config.upstreams = vec![gw::demo_stdio("demo")];
    let e = config.mounts().unwrap_err().to_string();
    assert!(
        e.contains("limits.max_in_flight_per_session: must be greater than 0"),
        "{e}"
    );
    assert!(
        e.contains("limits.max_stdio_children: must be greater than 0"),
        "{e}"
    );
}

// === overlays ===

#[tokio::test]
async fn overlay_directory_deleted_and_restored_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    g.gateway.live.watch(stop).unwrap();
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let with_ui = || async {
        let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
        assert_eq!(status, StatusCode::OK);
        body_json(&body)["result"]["tools"]
            .as_array()
            .expect("a tools/list result")
            .iter()
            .any(|t| !t["_meta"]["ui"]["resourceUri"].is_null())
    };
    assert!(with_ui().await, "overlays in force at start");
    let generation = g.gateway.live.generation();
    let (_, failed_before) = g.gateway.live.reload_counts();
    std::fs::remove_dir_all(&overlays).unwrap();
    // The removal is noticed as a failed reload: the last good overlays stay
    // in force and the session keeps its UI.
    let noticed = support::clients::wait_until(BOUND, || {
        (g.gateway.live.reload_counts().1 > failed_before).then_some(())
    })
    .await;
    assert!(noticed.is_some(), "the directory's removal was not noticed");
    assert_eq!(g.gateway.live.generation(), generation);
    assert!(with_ui().await, "the last good overlays stay in force");
    // The directory coming back, edited, is noticed and applies.
    copy_dir(&source, &overlays);
    let demo = overlays.join("demo.toml");
    let edited = std::fs::read_to_string(&demo)
        .unwrap()
        .replace("title = \"Add a task\"", "title = \"Add one task\"");
    std::fs::write(&demo, edited).unwrap();
    let deadline = Instant::now() + BOUND;
    let mut applied = false;
    while Instant::now() < deadline {
        let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        let (_, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
        if String::from_utf8_lossy(&body).contains("Add one task") {
            applied = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        applied,
        "overlays did not reload after the directory came back"
    );
    assert_good_serves_at(&url).await;
}

/// An overlay directory that can no longer be read (here: replaced by a
/// plain file, which `read_dir` refuses even to root) keeps the last good
/// overlays in force, and the failure is counted.
#[tokio::test]
async fn overlay_directory_unreadable_keeps_the_last_good_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let live = &g.gateway.live;
    let generation = live.generation();
    let (_, failed_before) = live.reload_counts();
    std::fs::remove_dir_all(&overlays).unwrap();
    std::fs::write(&overlays, "not a directory").unwrap();
    let outcome = live.reload();
    let errors = outcome.expect_err("an unreadable directory is a failed reload");
    assert!(errors.to_string().contains("overlays"), "{errors}");
    assert_eq!(live.generation(), generation);
    assert_eq!(live.reload_counts().1, failed_before + 1);
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::OK);
    let with_ui = body_json(&body)["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .any(|t| !t["_meta"]["ui"]["resourceUri"].is_null());
    assert!(with_ui, "the last good overlays stay in force");
}

/// A copy of the bundled overlays whose widget stylesheet is now a 300 MB
/// sparse file (no disk space used), over the default 16 MiB
/// `limits.max_widget_bytes`.
fn poison_stylesheet(overlays: &std::path::Path) -> std::path::PathBuf {
    let css = overlays.join("widgets/task-board/style.css");
    std::fs::File::create(&css)
        .unwrap()
        .set_len(300_000_000)
        .unwrap();
    css
}

#[tokio::test]
async fn an_oversize_widget_asset_is_refused_and_the_last_good_overlays_stay() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let live = &g.gateway.live;
    let generation = live.generation();
    poison_stylesheet(&overlays);
    let started = Instant::now();
    let errors = live
        .reload()
        .expect_err("an oversize asset fails the reload");
    let took = started.elapsed();
    let e = errors.to_string();
    assert!(
        e.contains("widgets/task-board/index.html")
            && e.contains("stylesheet href \"style.css\": is 300000000 bytes, over the 16777216-byte limit (limits.max_widget_bytes)"),
        "{e}"
    );
    // Refused from its size: never read.
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_eq!(live.generation(), generation);
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::OK);
    let with_ui = body_json(&body)["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .any(|t| !t["_meta"]["ui"]["resourceUri"].is_null());
    assert!(with_ui, "the last good overlays stay in force");
}

#[tokio::test]
async fn an_oversize_widget_asset_stops_the_start_naming_file_size_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    poison_stylesheet(&overlays);
    let closed = support::process::ClosedPort::new();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--config", "/dev/null", "--listen", "127.0.0.1:0"])
        .args(["--name", "demo", "--upstream"])
        .arg(format!("http://127.0.0.1:{}/mcp", closed.port()))
        .arg("--overlays")
        .arg(&overlays)
        .current_dir(dir.path());
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let (status, _, stderr) = gateway
        .finish_async(BOUND)
        .await
        .unwrap_or_else(|e| panic!("the gateway did not stop: {e}"));
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("widgets/task-board/index.html")
            && stderr.contains("stylesheet href \"style.css\": is 300000000 bytes, over the 16777216-byte limit (limits.max_widget_bytes)"),
        "{stderr}"
    );
}

async fn assert_good_serves_at(url: &str) {
    let (status, _, body) = post_json(url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn sse_event_over_the_limit_fails_that_request() {
    // A `tools/list` answer the gateway rewrites (the demo's overlays apply to a
    // mount named "demo"), as one SSE event of 64 KB sent in small pieces,
    // against a 1 KB limit: the gateway stops buffering it at the limit.
    let (url, _task) = raw_upstream(|mut s| async move {
        let big = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[],\"pad\":\"{}\"}}}}\n\n",
            "x".repeat(64 * 1024)
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if s.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for piece in big.as_bytes().chunks(256) {
            let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
            chunk.extend_from_slice(piece);
            chunk.extend_from_slice(b"\r\n");
            if s.write_all(&chunk).await.is_err() {
                return;
            }
            let _ = s.flush().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let _ = s.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let mut config = gw::test_config();
    config.limits.max_message_bytes = 1024;
    config.overlays = concat!(env!("CARGO_MANIFEST_DIR"), "/overlays").into();
    config.upstreams = vec![gw::http("demo", &url), {
        let mut good = gw::demo_stdio("good");
        good.path = Some("/good/mcp".into());
        good
    }];
    let g = TestGateway::start_with(config).await;
    let (status, _, body) = post_json(
        &g.url_for("/demo/mcp"),
        &[],
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = support::clients::parse_sse(&body);
    let last = events.last().expect("an event");
    let v = body_json(last.data.as_bytes());
    assert_eq!(v["id"], 2, "{v}");
    let message = v["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        message.contains("upstream 'demo'") && message.contains("exceeded 1024 bytes"),
        "{message}"
    );
    assert!(!String::from_utf8_lossy(&body).contains("xxxx"));
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn get_stream_resumption_is_the_clients_with_last_event_id_forwarded() {
    // The gateway does not replay or retry a GET stream itself (it keeps no
    // events); a client reconnecting with Last-Event-ID reaches the upstream
    // with it, and the upstream's event ids come back unchanged.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut got = 0;
                while !String::from_utf8_lossy(&buf[..got]).contains("\r\n\r\n") {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]).to_ascii_lowercase();
                let last = head
                    .lines()
                    .find_map(|l| l.strip_prefix("last-event-id:"))
                    .map(|v| v.trim().to_owned())
                    .unwrap_or_else(|| "none".into());
                let event = format!(
                    "id: after-{last}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"{last}\"}}}}\n\n"
                );
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{event}",
                    event.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    let g = gateway_with(gw::http("bad", &url)).await;
    let (status, _, body) = request_raw(
        Method::GET,
        &g.url_for("/bad/mcp"),
        &[("accept", "text/event-stream"), ("last-event-id", "ev-41")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = support::clients::parse_sse(&body);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].id.as_deref(), Some("after-ev-41"));
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn legacy_sse_upstream_going_away_ends_its_sessions_only() {
    let upstream = support::upstreams::start_sse().await.unwrap();
    let g = gateway_with(gw::sse("bad", &upstream.url)).await;
    let url = g.url_for("/bad/mcp");
    let (status, headers, _) = post_json(&url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    upstream.shutdown().await;
    // The session ends: its next request is refused clearly, never hangs.
    let started = Instant::now();
    let (status, _, body) = post_json(
        &url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .await;
    assert!(started.elapsed() < BOUND);
    let text = String::from_utf8_lossy(&body);
    assert!(
        status == StatusCode::NOT_FOUND
            || (status == StatusCode::OK && text.contains("upstream 'bad'")),
        "{status} {text}"
    );
    // A new session is refused with the upstream named.
    let (_, message) = bad_init(&g).await;
    assert!(message.contains("upstream 'bad'"), "{message}");
    assert_good_serves(&g).await;
}

#[tokio::test]
async fn http_upstream_hanging_mid_sse_answer_times_out_with_an_error_event() {
    let (url, _task) = raw_upstream(|mut s| async move {
        let event = "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
        let _ = s.write_all(chunk.as_bytes()).await;
        // Then nothing, with the connection open.
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(s);
    })
    .await;
    let g = gateway_with(gw::http("bad", &url)).await;
    let (first, rest) = read_broken_stream(&g).await;
    assert_eq!(first.id.as_deref(), Some("1"));
    assert_eq!(rest.len(), 1, "{rest:?}");
    let v = body_json(rest[0].as_bytes());
    assert_eq!(v["id"], 1, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("upstream 'bad'") && message.contains("no answer within 2 s"),
        "{message}"
    );
    assert_good_serves(&g).await;
}
