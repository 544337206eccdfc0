//! OpenTelemetry traces through the gateway, checked with a real OTLP/HTTP
//! receiver (tests/otlp/receiver.py, decoding with the official
//! opentelemetry-proto definitions): a `tools/call` continues the client's
//! trace (from its `traceparent` header, or from `params._meta`), yields
//! SERVER, CLIENT and rewrite spans linked parent to child with the MCP
//! semantic-convention attributes, and the upstream receives the context:
//! an HTTP upstream in its headers and `params._meta`, a stdio upstream in
//! `params._meta`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};

use mcp_ui_model::config::{Config, Telemetry};
use support::clients::{post_json, request_raw};
use support::gateway::{TestGateway, http, stdio, test_config};
use support::process::Proc;
use support::upstreams::{BoxResponse, spawn_server};

use crate::support;

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const META_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const META_SPAN: &str = "b7ad6b7169203331";

/// The OTLP receiver, and the file it writes spans to.
struct Receiver {
    _proc: Proc,
    port: u16,
    spans: PathBuf,
}

fn start_receiver(dir: &std::path::Path) -> Receiver {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("tests/peers/.venv/otlp/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash scripts/install-peers.sh` first",
        python.display()
    );
    let spans = dir.join("spans.jsonl");
    let proc = Proc::spawn(
        "otlp receiver",
        Command::new(python)
            .arg(root.join("tests/otlp/receiver.py"))
            .arg(&spans),
    );
    let port = proc
        .look_for(Duration::from_secs(30), |_, line| {
            line.strip_prefix("listening ")?.trim().parse::<u16>().ok()
        })
        .unwrap_or_else(|e| panic!("the receiver did not start: {e:?}\n{}", proc.tail(20)));
    Receiver {
        _proc: proc,
        port,
        spans,
    }
}

impl Receiver {
    /// Tracing to this receiver, batches sent after 50 ms.
    fn telemetry(&self) -> Telemetry {
        Telemetry {
            endpoint: Some(format!("http://127.0.0.1:{}", self.port)),
            schedule_delay_ms: Some(50),
            ..Telemetry::default()
        }
    }

    fn read(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.spans)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The spans of `trace`, once `count` of them have arrived.
    async fn wait_for(&self, trace: &str, count: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let spans: Vec<Value> = self
                .read()
                .into_iter()
                .filter(|s| s["trace_id"] == trace)
                .collect();
            if spans.len() >= count {
                return spans;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{} of {count} spans of trace {trace} exported in 30 s: {spans:#?}",
                spans.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn one<'a>(spans: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = spans
        .iter()
        .filter(|s| s["kind"] == kind && s["name"] == name)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {kind} span {name:?} expected in {spans:#?}"
    );
    found[0]
}

/// What the HTTP upstream received: the `traceparent` header and the body.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

async fn recording_upstream(seen: Seen) -> support::upstreams::Upstream {
    let stop = tokio_util::sync::CancellationToken::new();
    spawn_server(stop, "/mcp", move |req: Request<Incoming>| {
        let seen = seen.clone();
        async move {
            let tp = req
                .headers()
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            seen.lock().unwrap().push((tp, msg.clone()));
            let answer = json!({
                "jsonrpc": "2.0",
                "id": msg["id"],
                "result": {"content": [{"type": "text", "text": "{\"echoed\":true}"}]}
            });
            let mut r: BoxResponse = http::Response::new(
                Full::new(Bytes::from(answer.to_string()))
                    .map_err(|never| match never {})
                    .boxed(),
            );
            r.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            r
        }
    })
    .await
    .expect("upstream")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_is_traced_end_to_end_and_its_context_reaches_the_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let receiver = start_receiver(tmp.path());
    let seen: Seen = Arc::default();
    let upstream = recording_upstream(seen.clone()).await;
    // An overlay that shapes `echo`'s results: its calls are rewritten.
    let overlays = tmp.path().join("overlays");
    std::fs::create_dir_all(&overlays).unwrap();
    std::fs::write(
        overlays.join("web.toml"),
        "[tools.echo.result]\nstructured_from_text = true\n",
    )
    .unwrap();
    let gw = TestGateway::start_with(Config {
        upstreams: web_and_pipe(&upstream.url),
        overlays,
        telemetry: Telemetry {
            service_name: Some("gateway-under-test".into()),
            ..receiver.telemetry()
        },
        ..test_config()
    })
    .await;

    // 1. An HTTP upstream; the client's context in its traceparent header.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let (status, _, body) = post_json(
        &gw.url_for("/web"),
        &[
            ("traceparent", traceparent.as_str()),
            ("tracestate", "vendor=1"),
            ("mcp-protocol-version", "2025-06-18"),
        ],
        call.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["echoed"], true,
        "{answer}"
    );

    let spans = receiver.wait_for(CLIENT_TRACE, 3).await;
    let server = one(&spans, "SERVER", "tools/call echo");
    let client = one(&spans, "CLIENT", "tools/call echo");
    let rewrite = one(&spans, "INTERNAL", "rewrite tools/call");
    assert_eq!(
        server["parent_span_id"], CLIENT_SPAN,
        "continues the client's span"
    );
    assert_eq!(server["trace_state"], "vendor=1");
    assert_eq!(client["parent_span_id"], server["span_id"]);
    assert_eq!(rewrite["parent_span_id"], server["span_id"]);
    let a = &server["attributes"];
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], "echo");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["jsonrpc.request.id"], "7");
    assert_eq!(a["mcp.protocol.version"], "2025-06-18");
    assert_eq!(a["network.transport"], "tcp");
    assert_eq!(a["mcp_ui_gateway.mount"], "/web");
    assert_eq!(a["mcp_ui_gateway.upstream"], "web");
    assert!(a.get("error.type").is_none(), "{a}");
    assert_eq!(server["status"], "UNSET");
    assert_eq!(client["attributes"]["network.transport"], "tcp");
    assert_eq!(client["attributes"]["gen_ai.tool.name"], "echo");
    assert_eq!(server["resource"]["service.name"], "gateway-under-test");
    assert_eq!(server["content_type"], "application/x-protobuf");
    // Spans nest in time: the server span holds the others.
    for inner in [client, rewrite] {
        assert!(inner["start"].as_u64() >= server["start"].as_u64());
        assert!(inner["end"].as_u64() <= server["end"].as_u64());
    }
    // The upstream joined the trace, as the client span's child: in the
    // header and in params._meta, the rest of the message as sent.
    let expected = format!(
        "00-{CLIENT_TRACE}-{}-01",
        client["span_id"].as_str().unwrap()
    );
    let (header, msg) = seen
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("upstream called");
    assert_eq!(header.as_deref(), Some(expected.as_str()));
    assert_eq!(msg["params"]["_meta"]["traceparent"], expected.as_str());
    assert_eq!(msg["params"]["_meta"]["tracestate"], "vendor=1");
    assert_eq!(msg["params"]["arguments"], json!({"text": "hi"}));

    // 2. A stdio upstream; the client's context in params._meta.
    let meta_parent = format!("00-{META_TRACE}-{META_SPAN}-01");
    let call = json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
        "params": {"name": "echo_meta", "arguments": {},
                   "_meta": {"traceparent": meta_parent, "progressToken": 5,
                             "x-vendor": {"k": [1, 2]}}}});
    let (status, _, body) = post_json(&gw.url_for("/pipe"), &[], call.to_string()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).unwrap();
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let received: Value = serde_json::from_str(text).unwrap();
    let spans = receiver.wait_for(META_TRACE, 2).await;
    let server = one(&spans, "SERVER", "tools/call echo_meta");
    let client = one(&spans, "CLIENT", "tools/call echo_meta");
    assert_eq!(server["parent_span_id"], META_SPAN);
    assert_eq!(server["attributes"]["jsonrpc.request.id"], "a");
    assert_eq!(client["parent_span_id"], server["span_id"]);
    assert_eq!(client["attributes"]["network.transport"], "pipe");
    assert_eq!(client["attributes"]["mcp_ui_gateway.upstream"], "pipe");
    let expected = format!("00-{META_TRACE}-{}-01", client["span_id"].as_str().unwrap());
    assert_eq!(received["traceparent"], expected.as_str(), "{received}");
    assert_eq!(
        received["x-vendor"],
        json!({"k": [1, 2]}),
        "other _meta keys pass as sent"
    );
    // On a connection several clients may use, the progress token is the
    // connection's own (mapped back to 5 for the client).
    assert!(
        received["progressToken"]
            .as_str()
            .is_some_and(|t| t.starts_with("mcp-ui-gateway/p")),
        "{received}"
    );

    // 3. An error is recorded with its JSON-RPC code.
    let bad = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "echo_meta", "arguments": {},
                   "_meta": {"traceparent": format!("00-{}-{META_SPAN}-01", "1".repeat(32))}}});
    let (status, _, _) = post_json(
        &gw.url_for("/pipe"),
        &[("mcp-method", "tools/list")],
        bad.to_string(),
    )
    .await;
    assert!(status.is_client_error(), "{status}");
    let spans = receiver.wait_for(&"1".repeat(32), 1).await;
    let server = one(&spans, "SERVER", "tools/call echo_meta");
    assert_eq!(server["status"], "ERROR", "{server:#}");
    // Mcp-Method disagreeing with the body: refused with -32020.
    assert_eq!(server["attributes"]["error.type"], "-32020", "{server:#}");
    assert_eq!(server["attributes"]["rpc.response.status_code"], "-32020");

    // 4. A batch: a server span per request, each in its own context.
    let batch_trace = "2".repeat(32);
    let batch = json!([
        {"jsonrpc": "2.0", "id": "b1", "method": "tools/list",
         "params": {"_meta": {"traceparent": format!("00-{batch_trace}-{META_SPAN}-01")}}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": 1, "progress": 1}},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/list",
         "params": {"_meta": {"traceparent": format!("00-{batch_trace}-{CLIENT_SPAN}-01")}}}
    ]);
    let (status, _, body) = post_json(&gw.url_for("/pipe"), &[], batch.to_string()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let spans = receiver.wait_for(&batch_trace, 2).await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let mut ids: Vec<(&str, &str)> = spans
        .iter()
        .map(|s| {
            assert_eq!(s["kind"], "SERVER");
            assert_eq!(s["name"], "tools/list");
            (
                s["attributes"]["jsonrpc.request.id"].as_str().unwrap(),
                s["parent_span_id"].as_str().unwrap(),
            )
        })
        .collect();
    ids.sort();
    assert_eq!(ids, [("b1", META_SPAN), ("b2", CLIENT_SPAN)]);

    // 5. The conventional metrics, and the exporter's count.
    let (_, _, text) = request_raw(http::Method::GET, &gw.url_for("/metrics"), &[], "").await;
    let text = String::from_utf8_lossy(&text);
    for line in [
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"} 2",
        "mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\"} 2",
        "mcp_gateway_otlp_spans_total{result=\"dropped\"} 0",
    ] {
        assert!(text.contains(line), "{line} missing in:\n{text}");
    }
    assert!(!text.contains("mcp_gateway_otlp_spans_total{result=\"exported\"} 0"));

    gw.shutdown().await;
    upstream.shutdown().await;
}

/// A client's request chooses the tool name (a span's name and
/// `gen_ai.tool.name`) and the request id (`jsonrpc.request.id`): a 1 MB name
/// and a 100 KB id are exported cut to the limits (256 characters of a name,
/// 1024 of a value), never whole (before: 100 such calls took the gateway
/// from 33 MB to 3.77 GB of RSS with a collector that never answers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_chosen_names_and_ids_are_exported_cut_to_the_limits() {
    const TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4731";
    let tmp = tempfile::tempdir().unwrap();
    let receiver = start_receiver(tmp.path());
    let upstream = recording_upstream(Arc::default()).await;
    let gw = TestGateway::start_with(Config {
        upstreams: vec![http("web", &upstream.url)],
        telemetry: receiver.telemetry(),
        ..test_config()
    })
    .await;
    let name = format!("t{}", "x".repeat(1_000_000));
    let id = "i".repeat(100_000);
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {}}});
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let (status, _, body) = post_json(
        &gw.url(),
        &[
            ("traceparent", traceparent.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
        ],
        call.to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["id"], id.as_str(), "the id itself is unchanged");
    let spans = receiver.wait_for(TRACE, 2).await;
    let mut longest = 0;
    for span in &spans {
        let n = span["name"].as_str().unwrap().chars().count();
        assert!(n <= 256, "a span name of {n} characters");
        for (key, value) in span["attributes"].as_object().unwrap() {
            let n = value.as_str().map_or(0, |v| v.chars().count());
            assert!(n <= 1024, "{key}: {n} characters");
            longest = longest.max(n);
        }
    }
    let server = spans.iter().find(|s| s["kind"] == "SERVER").unwrap();
    let tool = server["attributes"]["gen_ai.tool.name"].as_str().unwrap();
    assert!(
        tool.starts_with("txxx") && tool.ends_with('…'),
        "{tool:.40}"
    );
    assert_eq!(longest, 1024, "{spans:#?}");
    gw.shutdown().await;
    upstream.shutdown().await;
}

/// A collector that answers 200 and then never ends its body (1 MiB chunks,
/// for as long as it is read): the exporter reads no more than an answer can
/// be, counts the batch failed at once, not at the export's time limit, and
/// says why in its own terms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_answering_without_end_is_not_read_without_end() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let stop = tokio_util::sync::CancellationToken::new();
    let collector = spawn_server(stop.clone(), "/", move |_req: Request<Incoming>| {
        let counter = counter.clone();
        async move {
            let chunk = Bytes::from(vec![0u8; 1 << 20]);
            let endless = futures_util::stream::repeat_with(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(chunk.clone()))
            });
            let r: BoxResponse =
                hyper::Response::new(http_body_util::StreamBody::new(endless).boxed());
            r
        }
    })
    .await
    .unwrap();
    let upstream = recording_upstream(Arc::default()).await;
    let gw = TestGateway::start_with(Config {
        upstreams: vec![http("web", &upstream.url)],
        telemetry: Telemetry {
            endpoint: Some(collector.base_url()),
            schedule_delay_ms: Some(20),
            timeout_ms: Some(60_000),
            ..Telemetry::default()
        },
        ..test_config()
    })
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let (status, _, _) = post_json(
        &gw.url(),
        &[("mcp-protocol-version", "2025-06-18")],
        call.to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let started = Instant::now();
    let failed = loop {
        let (_, _, text) = request_raw(http::Method::GET, &gw.url_for("/metrics"), &[], "").await;
        let text = String::from_utf8_lossy(&text).into_owned();
        if !text.contains("mcp_gateway_otlp_spans_total{result=\"failed\"} 0") {
            break text;
        }
        let mib = served.load(Ordering::Relaxed);
        assert!(
            started.elapsed() < Duration::from_secs(20) && mib < 64,
            "the batch was not given up: {mib} MiB of answer read in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        failed.contains("mcp_gateway_otlp_spans_total{result=\"failed\"}"),
        "{failed}"
    );
    // The collector's stream is read only as far as the cap (what the
    // kernel's buffers take on top of it is all that is sent).
    let mib = served.load(Ordering::Relaxed);
    assert!(
        mib < 32,
        "{mib} MiB of the collector's answer were produced"
    );
    eprintln!(
        "endless collector answer: the batch failed after {:.2} s, {mib} MiB produced",
        started.elapsed().as_secs_f64()
    );
    gw.shutdown().await;
    upstream.shutdown().await;
    stop.cancel();
}

/// An HTTP upstream with sessions: `initialize` opens `up-1`, `up-2`, …;
/// `DELETE` ends one (200); any other request names a session it has
/// forgotten (404).
/// An HTTP mount `web` at `/web` in front of `url`, and a stdio mount `pipe`
/// at `/pipe` (`tests/otlp/echo_stdio.py`).
fn web_and_pipe(url: &str) -> Vec<mcp_ui_model::config::UpstreamConfig> {
    let echo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/echo_stdio.py");
    let mut web = http("web", url);
    web.path = Some("/web".into());
    let mut pipe = stdio("pipe", "python3", &[echo.to_str().unwrap()]);
    pipe.path = Some("/pipe".into());
    vec![web, pipe]
}

async fn session_upstream() -> support::upstreams::Upstream {
    let stop = tokio_util::sync::CancellationToken::new();
    let opened = Arc::new(std::sync::atomic::AtomicU32::new(0));
    spawn_server(stop, "/mcp", move |req: Request<Incoming>| {
        let opened = opened.clone();
        async move {
            let method = req.method().clone();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let reply = |status: u16, body: String| {
                let mut r: BoxResponse = http::Response::new(
                    Full::new(Bytes::from(body))
                        .map_err(|never| match never {})
                        .boxed(),
                );
                *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
                r
            };
            if method == http::Method::DELETE {
                return reply(200, String::new());
            }
            if msg["method"] != "initialize" {
                return reply(404, String::new());
            }
            let n = opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "serverInfo": {"name": "sessions", "version": "1"}}});
            let mut r = reply(200, answer.to_string());
            r.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            r.headers_mut()
                .insert("mcp-session-id", format!("up-{n}").parse().unwrap());
            r
        }
    })
    .await
    .expect("upstream")
}

/// `mcp_server_session_duration_seconds` counts a session when it ends: a
/// client's DELETE (an HTTP upstream's session, timed from the start its
/// sealed id carries, and a stdio one), and an HTTP upstream's 404 for the
/// session it issued (`error_type="session_expired"`). Labels stay bounded:
/// the protocol revision the client names, never a session id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_durations_are_counted_when_sessions_end() {
    let upstream = session_upstream().await;
    let gw = TestGateway::start_with(Config {
        upstreams: web_and_pipe(&upstream.url),
        ..test_config()
    })
    .await;
    let version = ("mcp-protocol-version", "2025-06-18");
    let initialize = |path: &'static str| {
        let url = gw.url_for(path);
        async move {
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}});
            let (status, headers, body) = post_json(&url, &[], init.to_string()).await;
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
            headers["mcp-session-id"].to_str().unwrap().to_owned()
        }
    };

    // 1. Deleted by the client: an HTTP upstream's session and a stdio one.
    for path in ["/web", "/pipe"] {
        let sid = initialize(path).await;
        let (status, _, _) = request_raw(
            http::Method::DELETE,
            &gw.url_for(path),
            &[("mcp-session-id", sid.as_str()), version],
            "",
        )
        .await;
        assert!(status.is_success(), "{path}: {status}");
    }
    // 2. Forgotten by the HTTP upstream: its 404 ends the session.
    let sid = initialize("/web").await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, _) = post_json(
        &gw.url_for("/web"),
        &[("mcp-session-id", sid.as_str()), version],
        list.to_string(),
    )
    .await;
    assert_eq!(status, 404);

    let (_, _, text) = request_raw(http::Method::GET, &gw.url_for("/metrics"), &[], "").await;
    let text = String::from_utf8_lossy(&text);
    let family = "mcp_server_session_duration_seconds";
    let deleted = format!(
        "{family}_count{{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\"}} 2"
    );
    let expired = format!(
        "{family}_count{{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\",error_type=\"session_expired\"}} 1"
    );
    for line in [deleted.as_str(), expired.as_str()] {
        assert!(text.contains(line), "{line} missing in:\n{text}");
    }
    // Sessions that lasted well under a second.
    assert!(text.contains(&format!(
        "{family}_bucket{{mcp_protocol_version=\"2025-06-18\",network_transport=\"tcp\",le=\"1\"}} 2"
    )));
    assert!(
        !text.contains("up-1") && !text.contains(&sid),
        "no session ids"
    );

    gw.shutdown().await;
    upstream.shutdown().await;
}

const SAMPLING_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4737";

/// A request the upstream sends the client (`sampling/createMessage`, on the
/// SSE answer of a `tools/call`) gets a CLIENT span of its own, child of the
/// call's server span, from its relay to the relay of the client's answer;
/// an answer that is an error records its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_to_the_client_is_traced_until_its_answer() {
    use support::upstreams::{HttpFlavor, start_http};
    let tmp = tempfile::tempdir().unwrap();
    let receiver = start_receiver(tmp.path());
    let upstream = start_http(HttpFlavor::StatefulSse).await.expect("fixture");
    let mut fixture = http("fixture", &upstream.url);
    fixture.path = Some("/f".into());
    let gw = TestGateway::start_with(Config {
        upstreams: vec![fixture],
        telemetry: receiver.telemetry(),
        ..test_config()
    })
    .await;
    let url = gw.url_for("/f");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let (status, headers, body) = post_json(&url, &[], init.to_string()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post_json(&url, &session, initialized.to_string()).await;
    assert!(status.is_success(), "{status}");

    let limit = Duration::from_secs(30);
    // Twice: answered with a result, then with an error.
    for (n, answer) in [
        json!({"result": {"role": "assistant", "model": "test",
            "content": {"type": "text", "text": "sampled"}}}),
        json!({"error": {"code": -1, "message": "the user declined"}}),
    ]
    .into_iter()
    .enumerate()
    {
        let traceparent = format!("00-{SAMPLING_TRACE}-00f067aa0ba902b{n}-01");
        let mut headers = session.to_vec();
        headers.extend([
            ("traceparent", traceparent.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ]);
        let call = json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
            "params": {"name": "sample", "arguments": {"prompt": "hello"}}});
        let (status, _, mut events) =
            support::clients::open_sse(http::Method::POST, &url, &headers, call.to_string())
                .await
                .unwrap();
        assert_eq!(status, 200);
        let request = loop {
            let e = events.next_event(limit).await.unwrap().expect("a request");
            // rmcp opens its streams with an event of no data.
            let Ok(m) = e.json() else { continue };
            if m["method"] == "sampling/createMessage" {
                break m;
            }
        };
        let mut reply = answer.clone();
        reply["jsonrpc"] = json!("2.0");
        reply["id"] = request["id"].clone();
        let (status, _, body) = post_json(&url, &session, reply.to_string()).await;
        assert!(
            status.is_success(),
            "{status}: {}",
            String::from_utf8_lossy(&body)
        );
        loop {
            let e = events
                .next_event(limit)
                .await
                .unwrap()
                .expect("the call's answer");
            if e.json().is_ok_and(|m| m["id"] == 10 + n) {
                break;
            }
        }
    }

    // Per call: its SERVER and CLIENT spans, and the sampling request's.
    let spans = receiver.wait_for(SAMPLING_TRACE, 6).await;
    let sampling: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "sampling/createMessage")
        .collect();
    assert_eq!(sampling.len(), 2, "{spans:#?}");
    for (n, span) in sampling.iter().enumerate() {
        assert_eq!(span["kind"], "CLIENT");
        let parent = spans
            .iter()
            .find(|s| s["span_id"] == span["parent_span_id"])
            .unwrap_or_else(|| panic!("the parent of {span:#}"));
        assert_eq!(parent["kind"], "SERVER");
        assert_eq!(parent["name"], "tools/call sample");
        let a = &span["attributes"];
        assert_eq!(a["mcp.method.name"], "sampling/createMessage");
        assert_eq!(a["mcp.session.id"], sid.as_str());
        assert_eq!(a["mcp_ui_gateway.upstream"], "fixture");
        assert!(a.get("jsonrpc.request.id").is_some(), "{a}");
        // Within the call, which waited for the answer.
        assert!(span["start"].as_u64() >= parent["start"].as_u64());
        assert!(span["end"].as_u64() <= parent["end"].as_u64());
        let _ = n;
    }
    let failed: Vec<&&Value> = sampling.iter().filter(|s| s["status"] == "ERROR").collect();
    assert_eq!(failed.len(), 1, "{sampling:#?}");
    assert_eq!(failed[0]["attributes"]["error.type"], "-1");
    assert_eq!(failed[0]["attributes"]["rpc.response.status_code"], "-1");

    gw.shutdown().await;
    upstream.shutdown().await;
}

/// Every metric the Grafana dashboard (deploy/grafana/mcp-ui-gateway.json)
/// queries is one the gateway serves at `/metrics` (a histogram by its
/// `_bucket`, `_count` or `_sum`), and every label it groups by is one that
/// metric carries when it has samples; the file is valid JSON and shows the conventional
/// families.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grafana_dashboard_queries_what_the_gateway_serves() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("deploy/grafana/mcp-ui-gateway.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    fn exprs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr", Value::String(e)) => out.push(e.clone()),
                        _ => exprs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
            _ => {}
        }
    }
    let mut queries = Vec::new();
    exprs(&dashboard["panels"], &mut queries);
    assert!(queries.len() >= 10, "{queries:?}");

    // A gateway with traffic in every family: a session opened, called and
    // deleted, and trace export on (to a port where nothing listens).
    let echo = root.join("tests/otlp/echo_stdio.py");
    let gw = TestGateway::start_with(Config {
        upstreams: vec![stdio("pipe", "python3", &[echo.to_str().unwrap()])],
        telemetry: Telemetry {
            endpoint: Some("http://127.0.0.1:9".into()),
            ..Telemetry::default()
        },
        ..test_config()
    })
    .await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let (status, headers, _) = post_json(&gw.url(), &[], init.to_string()).await;
    assert_eq!(status, 200);
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo_meta", "arguments": {}}});
    let (status, _, _) = post_json(&gw.url(), &session, call.to_string()).await;
    assert_eq!(status, 200);
    let (status, _, _) = request_raw(http::Method::DELETE, &gw.url(), &session, "").await;
    assert!(status.is_success(), "{status}");
    let (_, _, scraped) = request_raw(http::Method::GET, &gw.url_for("/metrics"), &[], "").await;
    let scraped = String::from_utf8_lossy(&scraped).into_owned();
    gw.shutdown().await;

    // Families by `# TYPE`, and the label names their samples carry.
    let mut families = std::collections::HashMap::<String, String>::new();
    let mut labels = std::collections::HashMap::<String, std::collections::HashSet<String>>::new();
    for line in scraped.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            families.insert(name.to_owned(), kind.to_owned());
        } else if let Some((name, rest)) = line.split_once('{') {
            let set = labels.entry(name.to_owned()).or_default();
            for pair in rest.split(',') {
                if let Some((k, _)) = pair.split_once('=') {
                    set.insert(k.trim().to_owned());
                }
            }
        }
    }
    let family_of = |name: &str| -> Option<String> {
        if families.contains_key(name) {
            return Some(name.to_owned());
        }
        ["_bucket", "_count", "_sum"].iter().find_map(|suffix| {
            let base = name.strip_suffix(suffix)?;
            (families.get(base).map(String::as_str) == Some("histogram")).then(|| base.to_owned())
        })
    };
    let mut used = std::collections::HashSet::new();
    for q in &queries {
        // Each metric is written with a selector: `name{…}`.
        let pieces: Vec<&str> = q.split('{').collect();
        let names: Vec<&str> = pieces[..pieces.len() - 1]
            .iter()
            .map(|p| {
                let start = p
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1);
                &p[start..]
            })
            .collect();
        assert!(names.iter().all(|n| n.starts_with("mcp_")), "{q}");
        assert!(!names.is_empty(), "no metric in {q}");
        for name in names {
            let family = family_of(name)
                .unwrap_or_else(|| panic!("{name} (in {q}) is not served at /metrics:\n{scraped}"));
            used.insert(family);
            // The labels it groups by: `by (a, b)`.
            for group in q.split("by (").skip(1) {
                let group = group.split(')').next().unwrap();
                // `error_type` is on failures' series alone.
                let grouped = group.split(',').map(str::trim);
                for label in grouped.filter(|l| !["le", "error_type"].contains(l)) {
                    // A family with no sample yet (upstream_up before the
                    // first probe) has its name checked only.
                    let carried = labels.get(name).is_none_or(|l| l.contains(label));
                    let other = q.matches("mcp_").count() > 1;
                    assert!(
                        carried || other,
                        "{name} has no label {label} (in {q}):\n{scraped}"
                    );
                }
            }
        }
    }
    for family in [
        "mcp_server_operation_duration_seconds",
        "mcp_client_operation_duration_seconds",
        "mcp_server_session_duration_seconds",
        "mcp_gateway_requests_total",
    ] {
        assert!(
            used.contains(family),
            "the dashboard does not show {family}"
        );
    }
}
