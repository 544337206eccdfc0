//! Faulty stdio upstreams: children that exit, write noise or invalid UTF-8,
//! flood stderr, close stdout, stop reading stdin or send a message over the
//! limit; the backoff between starts.

use super::*;

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
    use mcp_ui_upstream::upstream::stdio::backoff;
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
