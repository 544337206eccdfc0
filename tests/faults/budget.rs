//! The memory budget of answers read whole: over it, a request is refused
//! naming the limit; what is released is reused.

use super::*;

/// Answers every `tools/call` with a JSON result of `len` bytes, its head
/// (with the length) at once and its body once `release` is true; a call of
/// the tool `hold` never gets its body.
/// Wait until the gateway holds `bytes` of answers read whole, failing with
/// what it holds if that does not come within `BOUND`.
async fn memory_held_reaches(g: &TestGateway, bytes: usize) {
    let budget = &g.gateway.upstreams.buffers;
    let reached =
        support::clients::wait_until(BOUND, || (budget.in_use() == bytes).then_some(())).await;
    assert!(reached.is_some(), "held: {}", budget.in_use());
}

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
    assert_eq!(
        g.gateway.upstreams.buffers.in_use(),
        2 * ANSWER,
        "two answers held"
    );
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
    memory_held_reaches(&g, 0).await;
    // A client that goes away while its answer is held gives the bytes back.
    let abandoned = tokio::spawn({
        let (bad, body) = (bad.clone(), call(9, "hold"));
        async move { post_json(&bad, &[], body).await }
    });
    memory_held_reaches(&g, ANSWER).await;
    abandoned.abort();
    memory_held_reaches(&g, 0).await;
    assert_good_serves(&g).await;
}
