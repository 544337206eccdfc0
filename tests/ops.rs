//! Operations endpoints and request ids, against real upstreams on 127.0.0.1:
//!
//! - `/metrics` after a known sequence in front of the rmcp fixture as a stdio
//!   upstream (initialize, notifications/initialized, tools/list, three
//!   tools/call, a call to an unknown tool answered with a JSON-RPC error, a
//!   request with a forged session id answered 404, a DELETE): exact counter
//!   values, histogram `_count`/`_sum`/bucket consistency, the open sessions
//!   and stdio children gauges, and text that parses as Prometheus exposition
//!   format 0.0.4 (a small parser below);
//! - outcomes read from a streamable HTTP upstream's answers: an SSE result and
//!   an SSE JSON-RPC error, and a JSON upstream silent past the request timeout;
//! - a client that goes away before its answer counted as `cancelled`;
//! - overlay reloads counted by result;
//! - `/readyz`: 200 with a live upstream, 503 naming an upstream at a closed
//!   loopback port;
//! - `x-request-id`: echoed when sane, generated when absent or not sane,
//!   present on error responses;
//! - the gateway binary's log lines of a request carry its `request_id`, with
//!   `--log-format json` and in text.
//!
//! Every request and wait is bounded; children end with the test (kill on drop).

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use support::clients::{body_json, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::process::{ClosedPort, Proc, Stream, endpoint_url};
use support::upstreams::{self, HttpFlavor, STDIO_COMMAND};

const PROTOCOL: &str = "2025-11-25";
/// A condition that settles asynchronously (a child reaped).
const SETTLE_LIMIT: Duration = Duration::from_secs(15);
/// The gateway binary printing its endpoint line.
const START_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Prometheus text exposition (0.0.4), parsed strictly enough to catch format errors

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the exposition; panics naming the line that does not parse. Checks
/// that every sample belongs to a family declared by a `# TYPE` line before it,
/// that a family is declared once, and that `# HELP`/`# TYPE` name valid metrics.
fn parse_exposition(text: &str) -> Vec<Sample> {
    assert!(
        text.ends_with('\n'),
        "the exposition must end with a newline"
    );
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let keyword = words.next().unwrap_or("");
            let name = words.next().unwrap_or("");
            let tail = words.next().unwrap_or("");
            match keyword {
                "HELP" => assert!(valid_name(name), "{}", at()),
                "TYPE" => {
                    assert!(valid_name(name), "{}", at());
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&tail),
                        "unknown type, {}",
                        at()
                    );
                    assert!(
                        types.insert(name.to_owned(), tail.to_owned()).is_none(),
                        "family declared twice, {}",
                        at()
                    );
                }
                _ => {}
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let sample = parse_sample(line).unwrap_or_else(|e| panic!("{e}, {}", at()));
        let family = family_of(&sample.name, &types)
            .unwrap_or_else(|| panic!("sample of an undeclared family, {}", at()));
        if types[&family] == "histogram" {
            assert!(
                sample.name != family,
                "a histogram has only _bucket, _sum and _count samples, {}",
                at()
            );
        }
        samples.push(sample);
    }
    samples
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn family_of(name: &str, types: &BTreeMap<String, String>) -> Option<String> {
    if types.contains_key(name) {
        return Some(name.to_owned());
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let base = name.strip_suffix(suffix)?;
        (types.get(base).map(String::as_str) == Some("histogram")).then(|| base.to_owned())
    })
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(['{', ' '])
        .ok_or("no value after the metric name")?;
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err(format!("invalid metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices().peekable();
        let end;
        loop {
            // label name
            let start = chars.peek().map(|(i, _)| *i).ok_or("unterminated labels")?;
            if inner[start..].starts_with('}') {
                end = start + 1;
                break;
            }
            let eq = inner[start..].find('=').ok_or("label without '='")? + start;
            let label = &inner[start..eq];
            if !valid_name(label) || label.contains(':') {
                return Err(format!("invalid label name {label:?}"));
            }
            while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                chars.next();
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err("label value must be quoted".into());
            }
            let mut value = String::new();
            loop {
                match chars.next().map(|(_, c)| c) {
                    Some('\\') => match chars.next().map(|(_, c)| c) {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        other => return Err(format!("bad escape {other:?} in a label value")),
                    },
                    Some('"') => break,
                    Some('\n') | None => return Err("unterminated label value".into()),
                    Some(c) => value.push(c),
                }
            }
            if labels.insert(label.to_owned(), value).is_some() {
                return Err(format!("label {label:?} given twice"));
            }
            match chars.next() {
                Some((_, ',')) => continue,
                Some((i, '}')) => {
                    end = i + 1;
                    break;
                }
                _ => return Err("expected ',' or '}' after a label".into()),
            }
        }
        rest = &inner[end..];
    }
    let mut fields = rest
        .strip_prefix(' ')
        .ok_or("expected one space before the value")?
        .split(' ');
    let value = fields.next().ok_or("no value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().map_err(|_| format!("invalid value {v:?}"))?,
    };
    if let Some(ts) = fields.next() {
        ts.parse::<i64>()
            .map_err(|_| format!("invalid timestamp {ts:?}"))?;
    }
    if fields.next().is_some() {
        return Err("trailing fields".into());
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// The value of the one sample named `name` with exactly these labels.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let found: Vec<f64> = samples
        .iter()
        .filter(|s| s.name == name && s.labels == want)
        .map(|s| s.value)
        .collect();
    assert!(
        found.len() <= 1,
        "{name}{labels:?} appears {} times",
        found.len()
    );
    found.first().copied()
}

/// Every histogram series: buckets cumulative and ascending in `le`, `+Inf`
/// equal to `_count`, `_sum` non-negative (and at most count × the largest
/// finite bound when everything fell in finite buckets).
fn check_histograms(samples: &[Sample], name: &str) -> usize {
    // labels other than `le` -> (le, cumulative count) in order
    type Buckets = Vec<(f64, f64)>;
    let mut series: BTreeMap<Vec<(String, String)>, Buckets> = BTreeMap::new();
    for s in samples
        .iter()
        .filter(|s| s.name == format!("{name}_bucket"))
    {
        let mut labels = s.labels.clone();
        let le = labels.remove("le").expect("a bucket has le");
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().expect("le is a number")
        };
        series
            .entry(labels.into_iter().collect())
            .or_default()
            .push((le, s.value));
    }
    for (labels, buckets) in &series {
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for w in buckets.windows(2) {
            assert!(w[0].0 < w[1].0, "{name}{labels:?}: le not ascending");
            assert!(w[0].1 <= w[1].1, "{name}{labels:?}: buckets not cumulative");
        }
        let (last_le, last) = *buckets.last().unwrap();
        assert!(last_le.is_infinite(), "{name}{labels:?}: no +Inf bucket");
        let count = value(samples, &format!("{name}_count"), &pairs).expect("_count");
        let sum = value(samples, &format!("{name}_sum"), &pairs).expect("_sum");
        assert_eq!(last, count, "{name}{labels:?}: +Inf bucket != _count");
        assert!(sum >= 0.0, "{name}{labels:?}: negative _sum");
        let finite_max = buckets[buckets.len() - 2].0;
        if buckets[buckets.len() - 2].1 == count {
            assert!(
                sum <= count * finite_max,
                "{name}{labels:?}: _sum {sum} exceeds {count} × {finite_max}"
            );
        }
    }
    series.len()
}

async fn scrape(gateway: &TestGateway) -> (String, Vec<Sample>) {
    let (status, headers, body) =
        request_raw(Method::GET, &gateway.url_for("/metrics"), &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = String::from_utf8(body.to_vec()).expect("UTF-8 exposition");
    let samples = parse_exposition(&text);
    (text, samples)
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

// ---------------------------------------------------------------------------------------
// The known sequence

#[tokio::test]
async fn metrics_count_a_known_sequence_exactly() {
    // A session that owns its child: its DELETE ends the child.
    let gateway =
        TestGateway::start(vec![gw::per_client(gw::stdio("fx", STDIO_COMMAND, &[]))]).await;
    let url = gateway.url();

    // initialize (the client's request id is echoed)
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let (status, headers, body) = post_json(&url, &[("x-request-id", "ops-init-1")], init).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers["x-request-id"], "ops-init-1");
    assert!(body_json(&body)["result"]["serverInfo"].is_object());
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", PROTOCOL),
    ];

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, _) = post_json(&url, &session, initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (status, _, body) = post_json(&url, &session, request(2, "tools/list", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body_json(&body)["result"]["tools"].is_array());

    for i in 0..3 {
        let call = request(
            10 + i,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": format!("hello {i}")}}),
        );
        let (status, headers, body) = post_json(&url, &session, call).await;
        assert_eq!(status, StatusCode::OK);
        let answer = body_json(&body);
        assert!(answer["result"].is_object(), "{answer}");
        // generated: 16 hex digits
        let rid = headers["x-request-id"].to_str().unwrap();
        assert!(
            rid.len() == 16 && rid.bytes().all(|b| b.is_ascii_hexdigit()),
            "{rid:?}"
        );
    }

    let unknown = request(
        20,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    let (status, _, body) = post_json(&url, &session, unknown).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body_json(&body)["error"]["code"].is_i64(),
        "an error answer"
    );

    // A forged session id: 404, with a request id all the same.
    let forged = [
        ("mcp-session-id", "forged-session-id"),
        ("mcp-protocol-version", PROTOCOL),
        ("x-request-id", "forged-1"),
    ];
    let (status, headers, _) = post_json(&url, &forged, request(30, "tools/list", json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["x-request-id"], "forged-1");

    let (text, samples) = scrape(&gateway).await;
    let requests = |method: &str, outcome: &str| {
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[("upstream", "fx"), ("method", method), ("outcome", outcome)],
        )
    };
    assert_eq!(requests("initialize", "ok"), Some(1.0), "{text}");
    assert_eq!(
        requests("notifications/initialized", "ok"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(requests("tools/list", "ok"), Some(1.0), "{text}");
    assert_eq!(requests("tools/list", "http_4xx"), Some(1.0), "{text}");
    assert_eq!(requests("tools/call", "ok"), Some(3.0), "{text}");
    assert_eq!(requests("tools/call", "jsonrpc_error"), Some(1.0), "{text}");
    let total: f64 = samples
        .iter()
        .filter(|s| s.name == "mcp_gateway_requests_total")
        .map(|s| s.value)
        .sum();
    assert_eq!(total, 8.0, "nothing else was counted:\n{text}");

    let status = |code: &str| {
        value(
            &samples,
            "mcp_gateway_http_requests_total",
            &[("status", code)],
        )
    };
    assert_eq!(status("200"), Some(6.0), "{text}");
    assert_eq!(status("202"), Some(1.0), "{text}");
    assert_eq!(status("404"), Some(1.0), "{text}");

    assert_eq!(
        check_histograms(&samples, "mcp_gateway_request_duration_seconds"),
        4,
        "one series per (upstream, method) seen:\n{text}"
    );
    let calls = [("upstream", "fx"), ("method", "tools/call")];
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_request_duration_seconds_count",
            &calls
        ),
        Some(4.0)
    );
    let sum = value(&samples, "mcp_gateway_request_duration_seconds_sum", &calls).unwrap();
    assert!(sum > 0.0 && sum < 4.0 * 20.0, "tools/call _sum {sum}");

    assert_eq!(
        value(&samples, "mcp_gateway_sessions_open", &[("upstream", "fx")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_stdio_children", &[]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_overlay_reloads_total",
            &[("result", "error")]
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );

    // End the session: counted as DELETE, and the child goes away.
    let (status, _, _) = request_raw(Method::DELETE, &url, &session, "").await;
    assert!(status.is_success(), "DELETE answered {status}");
    let deadline = Instant::now() + SETTLE_LIMIT;
    let samples = loop {
        let (_, samples) = scrape(&gateway).await;
        let children = value(&samples, "mcp_gateway_stdio_children", &[]);
        if children == Some(0.0) || Instant::now() > deadline {
            break samples;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        value(&samples, "mcp_gateway_stdio_children", &[]),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "mcp_gateway_sessions_open", &[("upstream", "fx")]),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[("upstream", "fx"), ("method", "DELETE"), ("outcome", "ok")]
        ),
        Some(1.0)
    );

    // Ready: the upstream answers a real MCP exchange.
    let (status, headers, body) =
        request_raw(Method::GET, &gateway.url_for("/readyz"), &[], "").await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.starts_with("ready\n"), "{body}");
    assert!(headers.contains_key("x-request-id"));
    let (_, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_up", &[("upstream", "fx")]),
        Some(1.0)
    );
    gateway.shutdown().await;
}

/// Outcomes read from a streamable HTTP upstream's answers: an SSE answer's
/// last event (a result, a JSON-RPC error), and a timeout.
#[tokio::test]
async fn metrics_read_outcomes_from_http_answers() {
    let sse_upstream = upstreams::start_http(HttpFlavor::StatefulSse)
        .await
        .expect("fixture upstream");
    let gateway = TestGateway::start(vec![gw::http("sse", &sse_upstream.url)]).await;
    let url = gateway.url();
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let (status, headers, _) = post_json(&url, &[], init).await;
    assert_eq!(status, StatusCode::OK);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", PROTOCOL),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, _) = post_json(&url, &session, initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    for (id, tool) in [(2, "echo"), (3, "no_such_tool")] {
        let call = request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": {"text": "hi"}}),
        );
        let (status, headers, _) = post_json(&url, &session, call).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream"),
            "the fixture answers in SSE"
        );
    }
    let (text, samples) = scrape(&gateway).await;
    let requests = |method: &str, outcome: &str| {
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[
                ("upstream", "sse"),
                ("method", method),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(requests("initialize", "ok"), Some(1.0), "{text}");
    assert_eq!(requests("tools/call", "ok"), Some(1.0), "{text}");
    assert_eq!(requests("tools/call", "jsonrpc_error"), Some(1.0), "{text}");
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_sessions_open",
            &[("upstream", "sse")]
        ),
        Some(0.0),
        "HTTP sessions live in their ids"
    );
    gateway.shutdown().await;
    sse_upstream.shutdown().await;

    // A JSON upstream that answers after the request timeout.
    let json_upstream = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .expect("fixture upstream");
    let mut config = gw::test_config();
    config.upstreams = vec![gw::http("slow", &json_upstream.url)];
    config.limits.request_timeout_secs = 2;
    let gateway = TestGateway::start_with(config).await;
    let call = request(
        4,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 10_000}}),
    );
    let (status, _, body) =
        post_json(&gateway.url(), &[("mcp-protocol-version", PROTOCOL)], call).await;
    assert_eq!(status, StatusCode::OK);
    let answer = body_json(&body);
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not answer within")),
        "{answer}"
    );
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[
                ("upstream", "slow"),
                ("method", "tools/call"),
                ("outcome", "timeout")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    gateway.shutdown().await;
    json_upstream.shutdown().await;
}

#[tokio::test]
async fn overlay_reloads_are_counted_by_result() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::http("gone", &format!("http://127.0.0.1:{port}/mcp"))];
    let gateway = TestGateway::start_with(config).await;
    let live = &gateway.gateway.live;
    live.reload().expect("an empty directory reloads");
    std::fs::write(overlays.join("gone.toml"), "this is = = not TOML\n").unwrap();
    assert!(live.reload().is_err(), "a broken file fails the reload");
    let (text, samples) = scrape(&gateway).await;
    let reloads = |result: &str| {
        value(
            &samples,
            "mcp_gateway_overlay_reloads_total",
            &[("result", result)],
        )
    };
    // (No watcher runs in the test gateway: these are the two reloads above.)
    assert_eq!(reloads("ok"), Some(1.0), "{text}");
    assert_eq!(reloads("error"), Some(1.0), "{text}");
    gateway.shutdown().await;
}

/// A client that goes away before its answer: counted as `cancelled`.
#[tokio::test]
async fn an_abandoned_request_counts_as_cancelled() {
    let upstream = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .expect("fixture upstream");
    let gateway = TestGateway::start(vec![gw::http("slow", &upstream.url)]).await;
    let call = request(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 20_000}}),
    );
    let url = gateway.url();
    let abandoned = tokio::time::timeout(
        Duration::from_millis(500),
        post_json(&url, &[("mcp-protocol-version", PROTOCOL)], call),
    )
    .await;
    assert!(abandoned.is_err(), "the slow call answered early");
    let cancelled = [
        ("upstream", "slow"),
        ("method", "tools/call"),
        ("outcome", "cancelled"),
    ];
    let deadline = Instant::now() + SETTLE_LIMIT;
    let (text, samples) = loop {
        let (text, samples) = scrape(&gateway).await;
        let seen = value(&samples, "mcp_gateway_requests_total", &cancelled).is_some();
        if seen || Instant::now() > deadline {
            break (text, samples);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        value(&samples, "mcp_gateway_requests_total", &cancelled),
        Some(1.0),
        "{text}"
    );
    gateway.shutdown().await;
    upstream.cancel();
}

#[tokio::test]
async fn readyz_names_an_unreachable_upstream() {
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let gateway = TestGateway::start(vec![gw::http(
        "gone",
        &format!("http://127.0.0.1:{port}/mcp"),
    )])
    .await;
    let (status, headers, body) =
        request_raw(Method::GET, &gateway.url_for("/readyz"), &[], "").await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.starts_with("not ready\n"), "{body}");
    assert!(body.contains("upstream 'gone': not ready"), "{body}");
    assert!(headers.contains_key("x-request-id"));

    // A request to it fails upstream: counted as such.
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let (status, _, body) = post_json(&gateway.url(), &[], init).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body_json(&body)["error"].is_object());
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_up", &[("upstream", "gone")]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "mcp_gateway_requests_total",
            &[
                ("upstream", "gone"),
                ("method", "initialize"),
                ("outcome", "upstream_error")
            ]
        ),
        Some(1.0),
        "{text}"
    );
    gateway.shutdown().await;
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated_on_every_response() {
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let gateway = TestGateway::start(vec![gw::http(
        "gone",
        &format!("http://127.0.0.1:{port}/mcp"),
    )])
    .await;
    let health = gateway.url_for("/healthz");
    let is_generated = |v: &hyper::header::HeaderValue| {
        v.len() == 16 && v.as_bytes().iter().all(u8::is_ascii_hexdigit)
    };

    let (_, h, _) = request_raw(Method::GET, &health, &[("x-request-id", "Abc.123_x")], "").await;
    assert_eq!(h["x-request-id"], "Abc.123_x");
    let (_, h, _) = request_raw(Method::GET, &health, &[], "").await;
    assert!(is_generated(&h["x-request-id"]), "{:?}", h["x-request-id"]);
    let (_, h2, _) = request_raw(Method::GET, &health, &[], "").await;
    assert_ne!(h["x-request-id"], h2["x-request-id"], "ids differ");
    // Not sane: replaced.
    let long = "x".repeat(129);
    for bad in ["has space", long.as_str()] {
        let (_, h, _) = request_raw(Method::GET, &health, &[("x-request-id", bad)], "").await;
        assert!(is_generated(&h["x-request-id"]), "{bad:?} kept");
    }
    let longest = "y".repeat(128);
    let (_, h, _) = request_raw(Method::GET, &health, &[("x-request-id", &longest)], "").await;
    assert_eq!(h["x-request-id"], longest.as_str());

    // Errors carry it: an unknown path, a bad media type, a forbidden Host,
    // a failed upstream.
    let (status, h, _) = request_raw(
        Method::GET,
        &gateway.url_for("/nowhere"),
        &[("x-request-id", "e1")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(h["x-request-id"], "e1");
    let (status, h, _) = request_raw(
        Method::POST,
        &gateway.url(),
        &[("x-request-id", "e2"), ("content-type", "text/plain")],
        "{}",
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(h["x-request-id"], "e2");
    let (status, h, _) = request_raw(
        Method::GET,
        &health,
        &[("x-request-id", "e3"), ("host", "evil.example")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(h["x-request-id"], "e3");
    let (status, h, _) = post_json(
        &gateway.url(),
        &[("x-request-id", "e4")],
        request(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h["x-request-id"], "e4");

    // Browsers may read it.
    let (_, h, _) = request_raw(
        Method::GET,
        &health,
        &[("origin", "http://localhost:5173")],
        "",
    )
    .await;
    let expose = h["access-control-expose-headers"].to_str().unwrap();
    assert!(expose.contains("x-request-id"), "{expose}");
    gateway.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// Log lines of a request carry its id (the gateway binary)

/// Runs the gateway binary with `log_format` in front of a closed port, sends one
/// request that fails upstream (which logs a warning) with the given request id,
/// stops the gateway and returns its stderr.
async fn stderr_of_failed_request(log_format: &str, request_id: &str) -> String {
    // Held to the end: nothing listens on the port, nor can.
    let closed = ClosedPort::new();
    let port = closed.port();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["--log-format", log_format, "serve", "--config", "/dev/null"])
        .args(["--listen", "127.0.0.1:0", "--name", "gone"])
        .arg("--upstream")
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg("--overlays")
        .arg(dir.path().join("none"))
        .current_dir(dir.path())
        .env("RUST_LOG", "info");
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let url = gateway
        .look_for_async(START_LIMIT, |stream, line| {
            endpoint_url(line).filter(|_| stream == Stream::Stdout)
        })
        .await
        .unwrap_or_else(|_| panic!("no endpoint line; stderr:\n{}", gateway.stderr()));

    let (status, headers, body) = post_json(
        &url,
        &[("x-request-id", request_id)],
        request(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["x-request-id"], request_id);
    assert!(body_json(&body)["error"].is_object());

    gateway.kill_tree();
    let (_, _, stderr) = gateway.finish(SETTLE_LIMIT).expect("killed");
    stderr
}

#[tokio::test]
async fn json_log_lines_carry_the_request_id() {
    let stderr = stderr_of_failed_request("json", "log-json-7").await;
    let lines: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(!lines.is_empty(), "no JSON log lines:\n{stderr}");
    let ours: Vec<&Value> = lines
        .iter()
        .filter(|l| l["span"]["request_id"] == "log-json-7")
        .collect();
    assert!(
        ours.iter()
            .any(|l| l["fields"]["message"] == "upstream request failed"),
        "the request's warning lacks its request_id:\n{stderr}"
    );
    // Every line logged inside the request carries it.
    for line in lines.iter().filter(|l| l["spans"].is_array()) {
        let in_request = line["spans"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "request");
        if in_request {
            assert!(line["span"]["request_id"].is_string(), "{line}");
        }
    }
}

#[tokio::test]
async fn text_log_lines_carry_the_request_id() {
    let stderr = stderr_of_failed_request("text", "log-text-7").await;
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("upstream request failed") && l.contains("request_id=log-text-7")),
        "the request's warning lacks its request_id:\n{stderr}"
    );
}

#[test]
fn the_parser_rejects_malformed_exposition() {
    for bad in [
        "# TYPE a counter\na{x=\"1} 1\n",
        "# TYPE a counter\na{x=1} 1\n",
        "# TYPE a counter\na 1 2 3\n",
        "b 1\n",
        "# TYPE a counter\na{x=\"\\q\"} 1\n",
        "# TYPE a counter\na one\n",
    ] {
        let outcome = std::panic::catch_unwind(|| parse_exposition(bad));
        assert!(outcome.is_err(), "accepted {bad:?}");
    }
    let ok = parse_exposition(
        "# HELP a x\n# TYPE a counter\na{x=\"q\\\"\\\\\\n\",y=\"\"} 1.5\na 2 1700000000\n",
    );
    assert_eq!(ok[0].labels["x"], "q\"\\\n");
    assert_eq!(ok[1].value, 2.0);
}

/// What `/metrics` says of sessions on a shared stdio mount: client
/// sessions and upstream connections now, processes started and sessions
/// revived since the start: three sessions and a sessionless call on one
/// child; the child killed, the next call revives it on a second.
#[tokio::test]
async fn metrics_count_client_sessions_connections_processes_and_revivals() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec {STDIO_COMMAND}", pids.display());
    let gateway = TestGateway::start(vec![gw::stdio("fx", "sh", &["-c", &script])]).await;
    let url = gateway.url();
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": PROTOCOL, "capabilities": {},
               "clientInfo": {"name": "ops-test", "version": "1"}}),
    );
    let mut sids = Vec::new();
    for _ in 0..3 {
        let (status, headers, _) = post_json(&url, &[], init.clone()).await;
        assert_eq!(status, StatusCode::OK);
        sids.push(headers["mcp-session-id"].to_str().unwrap().to_owned());
    }
    let echo = request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let (status, _, _) = post_json(&url, &[], echo.clone()).await;
    assert_eq!(status, StatusCode::OK);
    let fx = [("upstream", "fx")];
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_client_sessions", &fx),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_connections", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_processes_started_total", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_sessions_revived_total", &fx),
        Some(0.0),
        "{text}"
    );
    // The child dies; the next call (of a session) starts another.
    let pid: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(support::process::signal("KILL", &[pid]));
    assert!(support::process::wait_gone(vec![pid], Duration::from_secs(10)).is_empty());
    let gone = support::clients::wait_until(Duration::from_secs(10), || {
        (gateway.gateway.children.running() == 0).then_some(())
    })
    .await;
    assert!(gone.is_some());
    let (status, _, body) = post_json(&url, &[("mcp-session-id", sids[0].as_str())], echo).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body_json(&body)["result"]["content"][0]["text"],
        "hi",
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (text, samples) = scrape(&gateway).await;
    assert_eq!(
        value(&samples, "mcp_gateway_processes_started_total", &fx),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_sessions_revived_total", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "mcp_gateway_upstream_connections", &fx),
        Some(1.0),
        "{text}"
    );
}

/// A request to a path nothing serves is answered 404 with the paths that
/// are served: each mount's and each app's MCP endpoint (with its members),
/// and the operational ones. (Before: "this gateway serves MCP at its mount
/// paths", naming none.)
#[tokio::test]
async fn a_path_nothing_serves_is_answered_with_the_paths_served() {
    use mcp_ui_gateway::config::{AppConfig, Config, MemberConfig};
    let gateway = TestGateway::start_with(Config {
        upstreams: vec![
            gw::stdio("time", STDIO_COMMAND, &[]),
            gw::stdio("memory", STDIO_COMMAND, &[]),
        ],
        apps: vec![AppConfig {
            name: "suite".into(),
            path: None,
            upstreams: vec![
                MemberConfig::Name("time".into()),
                MemberConfig::Table {
                    upstream: "memory".into(),
                    prefix: Some("m_".into()),
                },
            ],
        }],
        ..gw::test_config()
    })
    .await;
    let (status, headers, body) = request_raw(Method::GET, &gateway.url_for("/mpc"), &[], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    let text = String::from_utf8_lossy(&body);
    for line in [
        "not found: nothing is served at this path. This gateway serves:",
        "  /time/mcp  MCP, upstream 'time'",
        "  /memory/mcp  MCP, upstream 'memory'",
        "  /suite/mcp  MCP, app 'suite' of time, memory",
        "  /healthz, /readyz, /metrics  health, readiness and metrics",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
}
