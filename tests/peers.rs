//! The gateway binary against real MCP peers written by others (see
//! `tests/peers/README.md`): `@modelcontextprotocol/server-everything` fronted over
//! streamable HTTP, legacy HTTP+SSE and stdio, `mcp-server-time` over stdio, the Python
//! `mcp` client and the TypeScript SDK v1 client driven through it, and the official
//! conformance suite run differentially (direct vs through the gateway).
//!
//! Every test compares a run through the gateway with the same run direct, and a failure
//! says which fact differed. The peers are installed by `scripts/install-peers.sh`; when
//! they are missing the tests fail saying so, unless `MCP_UI_SKIP_PEERS=1`, which
//! turns that into a printed note and a skip.
//!
//! Every process a test starts (servers, gateways, clients, and what they start in turn)
//! is killed by PID when the test ends, panics included; every wait is bounded. The tests
//! are heavy for a 2-core machine, so they take turns on one async mutex.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;
use support::clients::post_json;
use support::peers::*;
use support::process::{Proc, truncate};

use crate::support;

/// Test 1 for one upstream transport: each client direct, then through the gateway.
async fn everything_clients_match_direct(transport: Transport) {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let stdio = everything_stdio_command(&peers);
    let (server, gateway) = match transport {
        Transport::StreamableHttp => {
            let (server, url) = start_everything(&peers, "streamableHttp").await;
            let gw = Gateway::start(&peers, transport.label(), Upstream::Http(&url)).await;
            (Some((server, url)), gw)
        }
        Transport::LegacySse => {
            let (server, url) = start_everything(&peers, "sse").await;
            let gw = Gateway::start(&peers, transport.label(), Upstream::Sse(&url)).await;
            (Some((server, url)), gw)
        }
        Transport::Stdio => {
            let gw = Gateway::start(&peers, transport.label(), Upstream::Stdio(&stdio)).await;
            (None, gw)
        }
    };
    let mut failures = Vec::new();
    for kind in ClientKind::ALL {
        let target = match (&server, transport) {
            (Some((_, url)), Transport::StreamableHttp) => Target::Streamable(url),
            (Some((_, url)), _) => Target::Sse(url),
            (None, _) => Target::Stdio(&stdio),
        };
        let direct = run_client_direct(&peers, kind, target, &[]).await;
        let via = run_client_via(&peers, &gateway, kind, &[]).await;
        println!(
            "[{}] {} direct:      {}\n[{}] {} via gateway: {}",
            transport.label(),
            kind.label(),
            brief(&direct),
            transport.label(),
            kind.label(),
            brief(&via)
        );
        let mut diffs = everything_diffs(&direct, &via);
        // Downstream of the gateway is always streamable HTTP, where every progress
        // notification must reach the client's callback too.
        if via["progress_callbacks"] != via["progress_expected"] {
            diffs.push(format!(
                "  progress_callbacks through gateway = {}, expected {} (direct: {})",
                via["progress_callbacks"], via["progress_expected"], direct["progress_callbacks"]
            ));
        }
        if !diffs.is_empty() {
            failures.push(format!(
                "{} over a {} upstream: the run through the gateway differs from direct:\n{}\n  \
                 gateway HTTP log: {}",
                kind.label(),
                transport.label(),
                diffs.join("\n"),
                via["http_log"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        gateway.proc.tail(40)
    );
    gateway.stop().await;
    drop(server);
    println!("[{}] done in {:.1?}", transport.label(), t0.elapsed());
}

#[tokio::test]
async fn everything_over_streamable_http_upstream_serves_py_and_ts_clients_like_direct() {
    everything_clients_match_direct(Transport::StreamableHttp).await;
}

#[tokio::test]
async fn everything_over_legacy_sse_upstream_serves_py_and_ts_clients_like_direct() {
    everything_clients_match_direct(Transport::LegacySse).await;
}

#[tokio::test]
async fn everything_over_stdio_upstream_serves_py_and_ts_clients_like_direct() {
    everything_clients_match_direct(Transport::Stdio).await;
}

// ---------------------------------------------------------------------------------------
// Test 2: mcp-server-time over stdio

#[tokio::test]
async fn time_server_over_stdio_lists_tools_and_tells_the_time_through_the_gateway() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let command = time_stdio_command(&peers);
    let gateway = Gateway::start(&peers, "stdio mcp-server-time", Upstream::Stdio(&command)).await;
    let dir = tempfile::tempdir().unwrap();
    let call = [
        "--call",
        "get_current_time",
        "--args",
        r#"{"timezone":"UTC"}"#,
    ];
    let mut failures = Vec::new();
    for kind in ClientKind::ALL {
        let dump = |who: &str| {
            dir.path()
                .join(format!("{}-{who}-tools.json", kind.label()))
        };
        let (d_dump, g_dump) = (dump("direct"), dump("gateway"));
        let with_dump = |file: &Path| {
            let mut a: Vec<String> = call.iter().map(|s| s.to_string()).collect();
            if kind == ClientKind::TypeScript {
                a.extend(["--dump-tools".into(), file.display().to_string()]);
            }
            a
        };
        let d_args = with_dump(&d_dump);
        let g_args = with_dump(&g_dump);
        let d_args: Vec<&str> = d_args.iter().map(String::as_str).collect();
        let g_args: Vec<&str> = g_args.iter().map(String::as_str).collect();
        let direct = run_client_direct(&peers, kind, Target::Stdio(&command), &d_args).await;
        let via = run_client_via(&peers, &gateway, kind, &g_args).await;
        println!(
            "[time] {} direct: protocol {} ({}), tools {}, call {}\n[time] {} via gateway: \
             protocol {} ({}), tools {}, call {}",
            kind.label(),
            direct["protocol_version"],
            direct["negotiation"],
            direct["tools"],
            direct["call"]["structured_content"],
            kind.label(),
            via["protocol_version"],
            via["negotiation"],
            via["tools"],
            via["call"]["structured_content"],
        );
        let mut diffs = fact_diffs(
            &[
                "protocol_version",
                "negotiation",
                "server_info",
                "tools",
                "tool_count",
                "call.tool",
                "call.is_error",
                "call.structured_content.timezone",
                "call.structured_content.is_dst",
            ],
            &direct,
            &via,
        );
        if !via["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "get_current_time"))
        {
            diffs.push(format!(
                "  tools through gateway lack get_current_time: {}",
                via["tools"]
            ));
        }
        // The text content is the structured content as JSON; the clock has moved between
        // the runs, so compare the shape: the same keys in the same order.
        let keys = |v: &Value| -> Vec<String> {
            v["call"]["structured_content"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        if keys(&direct) != keys(&via) || keys(&via).is_empty() {
            diffs.push(format!(
                "  call.structured_content keys: direct = {:?}, through gateway = {:?}",
                keys(&direct),
                keys(&via)
            ));
        }
        let text_json: Option<Value> = via["call"]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok());
        if text_json.as_ref() != Some(&via["call"]["structured_content"]) {
            diffs.push(format!(
                "  call.text through gateway is not the structured content as JSON: {}",
                via["call"]["text"]
            ));
        }
        if kind == ClientKind::TypeScript
            && let Some(d) = compare_dumps(&d_dump, &g_dump)
        {
            diffs.push(format!(
                "  raw tools/list result (stdio direct vs gateway): {d}"
            ));
        }
        if !diffs.is_empty() {
            failures.push(format!(
                "{} with mcp-server-time: the run through the gateway differs from direct \
                 (stdio):\n{}\n  gateway HTTP log: {}",
                kind.label(),
                diffs.join("\n"),
                via["http_log"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        gateway.proc.tail(40)
    );
    gateway.stop().await;
    println!("[time] done in {:.1?}", t0.elapsed());
}

// ---------------------------------------------------------------------------------------
// Test 3: lossless tools/list and resources/list

/// `None` when the two dumps are the same text, else where they first differ.
fn compare_dumps(reference: &Path, other: &Path) -> Option<String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("cannot read dump {}: {e}", p.display()))
    };
    let (a, b) = (read(reference), read(other));
    if a == b {
        return None;
    }
    // serde_json keeps key order here (the crate enables `preserve_order`), so a
    // difference in order alone is found too.
    let (va, vb): (Value, Value) = match (serde_json::from_str(&a), serde_json::from_str(&b)) {
        (Ok(va), Ok(vb)) => (va, vb),
        _ => {
            return Some(format!(
                "texts differ and do not both parse:\n{a}\n---\n{b}"
            ));
        }
    };
    let first = first_difference("$", &va, &vb)
        .unwrap_or_else(|| "same values, different text (number or string formatting)".into());
    let line = a
        .lines()
        .zip(b.lines())
        .position(|(x, y)| x != y)
        .map(|i| i + 1)
        .unwrap_or_else(|| a.lines().count().min(b.lines().count()) + 1);
    Some(format!(
        "{first} (first differing line {line} of {} vs {})",
        reference.display(),
        other.display()
    ))
}

/// The first path where `a` and `b` differ, key order included.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let Some(vb) = y.get(k) else {
                    return Some(format!(
                        "{path}.{k} missing through the gateway (direct: {})",
                        truncate(&va.to_string(), 200)
                    ));
                };
                if let Some(d) = first_difference(&format!("{path}.{k}"), va, vb) {
                    return Some(d);
                }
            }
            if let Some(k) = y.keys().find(|k| !x.contains_key(*k)) {
                return Some(format!("{path}.{k} added by the gateway"));
            }
            let (kx, ky): (Vec<_>, Vec<_>) = (x.keys().collect(), y.keys().collect());
            (kx != ky).then(|| format!("{path}: key order differs: direct {kx:?}, gateway {ky:?}"))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| {
                format!(
                    "{path}: {} items direct, {} through the gateway",
                    x.len(),
                    y.len()
                )
            })
        }
        _ => (a != b).then(|| {
            format!(
                "{path}: direct {}, through the gateway {}",
                truncate(&a.to_string(), 200),
                truncate(&b.to_string(), 200)
            )
        }),
    }
}

#[tokio::test]
async fn tools_and_resources_lists_are_byte_identical_through_every_upstream_transport() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let dumps = |label: &str| {
        let slug = label.replace(' ', "-");
        (
            dir.path().join(format!("{slug}-tools.json")),
            dir.path().join(format!("{slug}-resources.json")),
        )
    };
    let dump_args = |(tools, resources): &(PathBuf, PathBuf)| -> Vec<String> {
        vec![
            "--dump-tools".into(),
            tools.display().to_string(),
            "--dump-resources".into(),
            resources.display().to_string(),
        ]
    };
    let (_http_server, http_url) = start_everything(&peers, "streamableHttp").await;
    let (_sse_server, sse_url) = start_everything(&peers, "sse").await;

    // The reference: ts_client direct on streamable HTTP.
    let reference = dumps("direct streamable");
    let args = dump_args(&reference);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_client_direct(
        &peers,
        ClientKind::TypeScript,
        Target::Streamable(&http_url),
        &args,
    )
    .await;
    let ref_tools: Value =
        serde_json::from_str(&std::fs::read_to_string(&reference.0).unwrap()).unwrap();
    let tools = ref_tools["tools"]
        .as_array()
        .expect("reference tools/list has tools");
    assert!(
        tools.len() >= 13 && tools.iter().all(|t| t.get("execution").is_some()),
        "the reference tools/list is not server-everything's (13+ tools, each with `execution`): {ref_tools}"
    );

    let stdio = everything_stdio_command(&peers);
    let mut failures = Vec::new();
    for transport in Transport::ALL {
        let upstream = match transport {
            Transport::StreamableHttp => Upstream::Http(&http_url),
            Transport::LegacySse => Upstream::Sse(&sse_url),
            Transport::Stdio => Upstream::Stdio(&stdio),
        };
        let gateway = Gateway::start(&peers, transport.label(), upstream).await;
        let via = dumps(&format!("gateway {}", transport.label()));
        let args = dump_args(&via);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_client_via(&peers, &gateway, ClientKind::TypeScript, &args).await;
        for (what, r, g) in [
            ("tools/list", &reference.0, &via.0),
            ("resources/list", &reference.1, &via.1),
        ] {
            match compare_dumps(r, g) {
                None => println!(
                    "[lossless] {what} over a {} upstream: identical to direct ({} bytes)",
                    transport.label(),
                    std::fs::metadata(g).map(|m| m.len()).unwrap_or(0)
                ),
                Some(d) => failures.push(format!(
                    "{what} result over a {} upstream differs from direct streamable HTTP: {d}",
                    transport.label()
                )),
            }
        }
        gateway.stop().await;
    }
    assert!(
        failures.is_empty(),
        "not lossless:\n{}",
        failures.join("\n")
    );
    println!("[lossless] done in {:.1?}", t0.elapsed());
}

/// The one JSON-RPC message of a POST's answer: the body of a JSON answer,
/// the `data` of an SSE one's only message event.
fn answer_message(
    url: &str,
    (status, headers, body): (hyper::StatusCode, hyper::HeaderMap, bytes::Bytes),
) -> String {
    assert_eq!(
        status,
        200,
        "{url} answered initialize {status}: {}",
        String::from_utf8_lossy(&body)
    );
    let sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    match sse {
        false => String::from_utf8(body.to_vec()).expect("a JSON answer is UTF-8"),
        true => {
            let events = support::clients::parse_sse(&body);
            let data: Vec<&str> = events
                .iter()
                .map(|e| e.data.as_str())
                .filter(|d| !d.is_empty())
                .collect();
            assert_eq!(data.len(), 1, "{url}: one message expected in {events:?}");
            data[0].to_owned()
        }
    }
}

/// `message` written to a fresh stdio server's standard input, and the first
/// line it writes back.
async fn stdio_answer(command: &[String], message: &str) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the stdio server");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
        .await
        .expect("the stdio server answers within 20 s")
        .unwrap()
        .expect("the stdio server answers before it ends");
    child.kill().await.ok();
    line
}

/// README promises every message passes through unchanged. In the default
/// `shared` mode the gateway answers a client's `initialize` from its own
/// handshake with the upstream: the answer is the upstream's own bytes (its
/// key order: server-everything writes `result` before `jsonrpc` and `id`),
/// with only the id changed to the client's.
#[tokio::test]
async fn initialize_answers_are_the_upstreams_bytes_in_the_default_shared_mode() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let initialize = r#"{"jsonrpc":"2.0","id":"client-7","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bytes","version":"1"}}}"#;
    let (_server, http_url) = start_everything(&peers, "streamableHttp").await;
    let direct_http = answer_message(&http_url, post_json(&http_url, &[], initialize).await);
    let stdio = everything_stdio_command(&peers);
    let direct_stdio = stdio_answer(&stdio, initialize).await;
    assert!(
        direct_http.starts_with(r#"{"result":"#),
        "server-everything no longer writes `result` first, so this test proves less: {direct_http}"
    );
    let mut failures = Vec::new();
    for (upstream, direct) in [
        (Upstream::Http(&http_url), &direct_http),
        (Upstream::Stdio(&stdio), &direct_stdio),
    ] {
        let label = match upstream {
            Upstream::Http(_) => "streamable HTTP",
            _ => "stdio",
        };
        let gateway = Gateway::start(&peers, label, upstream).await;
        // Twice: the first client's answer comes from the handshake the
        // gateway makes for it, the second's from the one it keeps.
        for client in ["first", "second"] {
            let via = answer_message(&gateway.url, post_json(&gateway.url, &[], initialize).await);
            match &via == direct {
                true => println!("[lossless] initialize over {label}, {client} client: the upstream's {} bytes", via.len()),
                false => failures.push(format!(
                    "initialize over {label}, {client} client:\n  direct:  {direct}\n  gateway: {via}"
                )),
            }
        }
        gateway.stop().await;
    }
    assert!(
        failures.is_empty(),
        "not the upstream's bytes:\n{}",
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Test 4: conformance, differentially

async fn conformance(peers: &Peers, url: &str, label: &str) -> Result<BTreeSet<String>, String> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new(peers.script("conformance.sh"));
    cmd.arg(url)
        .arg(out.path())
        .env("CONFORMANCE_TIMEOUT", CONFORMANCE_OWN_TIMEOUT_S)
        .current_dir(&peers.root);
    let mut proc = Proc::spawn(format!("conformance.sh against {label}"), &mut cmd);
    let (status, _, stderr) = proc.finish_async(CONFORMANCE_LIMIT).await?;
    if !status.success() {
        return Err(format!(
            "conformance.sh against {label} ({url}) exited with {status}:\n{}",
            indent(&stderr)
        ));
    }
    println!(
        "[conformance] {}",
        stderr.lines().last().unwrap_or_default()
    );
    let text = std::fs::read_to_string(out.path()).map_err(|e| e.to_string())?;
    Ok(text
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .collect())
}

#[tokio::test]
async fn conformance_through_the_gateway_passes_everything_direct_passes_plus_dns_rebinding() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let (_http_server, http_url) = start_everything(&peers, "streamableHttp").await;
    let (_sse_server, sse_url) = start_everything(&peers, "sse").await;
    let baseline = conformance(
        &peers,
        &http_url,
        "server-everything direct (streamable HTTP)",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "[conformance] baseline, direct streamable HTTP ({}): {baseline:?}",
        baseline.len()
    );
    assert!(
        baseline.contains("server-initialize") && baseline.contains("tools-list"),
        "the direct baseline itself looks broken (no server-initialize / tools-list): {baseline:?}"
    );

    let stdio = everything_stdio_command(&peers);
    let mut failures = Vec::new();
    for transport in Transport::ALL {
        let upstream = match transport {
            Transport::StreamableHttp => Upstream::Http(&http_url),
            Transport::LegacySse => Upstream::Sse(&sse_url),
            Transport::Stdio => Upstream::Stdio(&stdio),
        };
        let gateway = Gateway::start(&peers, transport.label(), upstream).await;
        let label = format!("the gateway ({} upstream)", transport.label());
        let passed = match conformance(&peers, &gateway.url, &label).await {
            Ok(p) => p,
            Err(e) => panic!("{e}\n{}", gateway.proc.tail(40)),
        };
        let lost: Vec<_> = baseline.difference(&passed).collect();
        let gained: Vec<_> = passed.difference(&baseline).collect();
        println!(
            "[conformance] through gateway, {} upstream ({}): {passed:?}\n[conformance]   \
             gained {gained:?}, lost {lost:?}",
            transport.label(),
            passed.len()
        );
        if !lost.is_empty() {
            failures.push(format!(
                "{} upstream: scenarios passing direct fail through the gateway: {lost:?}",
                transport.label()
            ));
        }
        if !passed.contains("dns-rebinding-protection") {
            failures.push(format!(
                "{} upstream: dns-rebinding-protection fails through the gateway",
                transport.label()
            ));
        }
        gateway.stop().await;
    }
    // The same through a streamable HTTP mount whose clients share the
    // gateway's sessions (`sessions = "shared"`): stdio and legacy SSE
    // mounts above are shared by default.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway.toml");
    std::fs::write(
        &file,
        format!(
            "overlays = \"/nonexistent\"\n[[upstream]]\nname = \"up\"\nurl = \"{http_url}\"\nsessions = \"shared\"\n"
        ),
    )
    .unwrap();
    let label = "the gateway (streamable HTTP upstream, sessions = \"shared\")";
    let gateway = Gateway::start_with(
        &peers,
        "streamable HTTP, shared",
        Upstream::Configured,
        &["--config", file.to_str().unwrap()],
        &[],
    )
    .await;
    let passed = match conformance(&peers, &gateway.url, label).await {
        Ok(p) => p,
        Err(e) => panic!("{e}\n{}", gateway.proc.tail(40)),
    };
    let lost: Vec<_> = baseline.difference(&passed).collect();
    println!("[conformance] {label} ({}): lost {lost:?}", passed.len());
    if !lost.is_empty() {
        failures.push(format!(
            "{label}: scenarios passing direct fail through the gateway: {lost:?}"
        ));
    }
    gateway.stop().await;
    assert!(
        failures.is_empty(),
        "conformance through the gateway is worse than direct:\n{}\nbaseline: {baseline:?}",
        failures.join("\n")
    );
    println!("[conformance] done in {:.1?}", t0.elapsed());
}

// ---------------------------------------------------------------------------------------
// The decoupled data/render pattern, with the bundled demo and the repository's overlays

#[tokio::test]
async fn data_call_then_render_call_gets_the_template_only_on_the_render_call() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let overlays = peers.root.join("overlays");
    let gateway = Gateway::start(
        &peers,
        "bundled demo with overlays/",
        Upstream::DemoWithOverlays(&overlays),
    )
    .await;
    let mut failures = Vec::new();
    for kind in [ClientKind::Python] {
        let via = run_client_via(
            &peers,
            &gateway,
            kind,
            &["--data-tool", "list_tasks", "--call", "show_tasks"],
        )
        .await;
        let who = kind.label();
        let tools = &via["tools"];
        for name in ["list_tasks", "show_tasks", "refresh_tasks"] {
            if !tools
                .as_array()
                .is_some_and(|t| t.iter().any(|n| n == name))
            {
                failures.push(format!("{who}: {name} is not listed: {tools}"));
            }
        }
        let tool_meta = &via["tool_meta"];
        if !tool_meta["list_tasks"]["ui"]["resourceUri"].is_null() {
            failures.push(format!("{who}: the data tool has a template: {tool_meta}"));
        }
        let marker = &tool_meta["show_tasks"]["io.github.mcp-ui-gateway/renderTool"];
        if marker["dataTools"] != serde_json::json!(["list_tasks"]) {
            failures.push(format!(
                "{who}: show_tasks is not marked as a render tool: {tool_meta}"
            ));
        }
        let data = &via["data_call"];
        if data["is_error"] != false || !data["structured_content"]["tasks"].is_array() {
            failures.push(format!("{who}: the data call failed: {data}"));
        }
        if !data["meta"]["ui"]["resourceUri"].is_null()
            || !data["meta"]["openai/outputTemplate"].is_null()
        {
            failures.push(format!(
                "{who}: the data call's result carries a template: {data}"
            ));
        }
        let render = &via["call"];
        if render["is_error"] != false {
            failures.push(format!("{who}: the render call failed: {render}"));
        }
        if render["structured_content"] != data["structured_content"] {
            failures.push(format!(
                "{who}: the render call did not echo the data: {render}"
            ));
        }
        let uri = tool_meta["show_tasks"]["ui"]["resourceUri"]
            .as_str()
            .unwrap_or("");
        if !uri.starts_with("ui://task-board/")
            || render["meta"]["ui"]["resourceUri"] != uri
            || render["meta"]["openai/outputTemplate"] != uri
        {
            failures.push(format!(
                "{who}: the render call's result lacks the template {uri:?}: {render}"
            ));
        }
        println!("[render] {who}: data {data}\n[render] {who}: render {render}");
    }
    gateway.stop().await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Results validating clients accept, in front of a Python SDK server

/// The overlays of `tests/peers/py_server.py` (mounted as `upstream`): three ways to meet
/// the SDK's `{"result": "<text>"}` wrapping, and one schema its results cannot meet.
const PY_SERVER_OVERLAYS: &str = r#"
# Shaped from the wrapped text, checked against the overlay's schema.
[tools.list_tasks]
result = { structured_from_text = true }
[tools.list_tasks.output_schema]
type = "object"
required = ["tasks"]
properties.tasks = { type = "array", items = { type = "object", required = ["id", "title"] } }

# Shaped from the wrapped text; the overlay lists no schema (the wrapper's goes).
[tools.count_tasks]
result = { structured_from_text = true }

# A schema with shaping off: the wrapped result breaks it.
[tools.get_task.output_schema]
type = "object"
required = ["id"]

# Shaping on, but the text is no JSON.
[tools.greet]
result = { structured_from_text = true }
[tools.greet.output_schema]
type = "object"
required = ["greeting"]
"#;

/// Both SDK clients (which validate every result against the listed outputSchema) call
/// each tool of the Python SDK server through the gateway: shaped results are the parsed
/// text, and a result that cannot meet the listed schema is a tool error keeping the
/// server's text, never a result the client rejects.
#[tokio::test]
async fn python_sdk_results_are_shaped_or_answered_as_errors_that_validating_clients_accept() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("upstream.toml"), PY_SERVER_OVERLAYS).unwrap();
    let command = vec![
        peers.python.display().to_string(),
        peers.script("py_server.py").display().to_string(),
    ];
    let gateway = Gateway::start(
        &peers,
        "stdio Python SDK server with overlays",
        Upstream::StdioWithOverlays(&command, dir.path()),
    )
    .await;
    let mut failures = Vec::new();
    for kind in ClientKind::ALL {
        let who = kind.label();
        // Direct, the SDK's own wrapping: what the overlays meet.
        let direct = run_client_direct(
            &peers,
            kind,
            Target::Stdio(&command),
            &["--call", "list_tasks"],
        )
        .await;
        let wrapped = &direct["call"]["structured_content"]["result"];
        if !wrapped.is_string() || wrapped != &direct["call"]["text"] {
            failures.push(format!(
                "{who} direct: list_tasks is not wrapped as {{\"result\": text}}: {}",
                direct["call"]
            ));
        }
        let calls = [
            ("list_tasks", "{}"),
            ("count_tasks", "{}"),
            ("get_task", "{}"),
            ("greet", r#"{"name":"Ada"}"#),
        ];
        for (tool, args) in calls {
            let via = match run_client(
                &peers,
                kind,
                Target::Streamable(&gateway.url),
                &["--call", tool, "--args", args],
            )
            .await
            {
                Ok(via) => via,
                Err(e) => {
                    failures.push(format!(
                        "{who} -> {tool}: the client refused the result:\n{e}"
                    ));
                    continue;
                }
            };
            let call = &via["call"];
            println!("[py-sdk] {who} {tool}: {call}");
            let text = call["text"].as_str().unwrap_or("");
            let ok = match tool {
                "list_tasks" => {
                    call["is_error"] == false
                        && call["structured_content"]["tasks"][1]["title"] == "Ship"
                }
                "count_tasks" => {
                    call["is_error"] == false
                        && call["structured_content"] == serde_json::json!({ "count": 2 })
                }
                "get_task" => {
                    call["is_error"] == true
                        && call["structured_content"].is_null()
                        && text.contains("\"title\": \"Write the overlay\"")
                        && text.contains("does not match the outputSchema")
                }
                _ => {
                    call["is_error"] == true
                        && call["structured_content"].is_null()
                        && text.starts_with("Hello, Ada!")
                        && text.contains("does not match the outputSchema")
                }
            };
            if !ok {
                failures.push(format!("{who} -> {tool}: unexpected result {call}"));
            }
        }
    }
    let log = gateway.proc.tail(40);
    gateway.stop().await;
    assert!(failures.is_empty(), "{}\n{log}", failures.join("\n"));
    println!("[py-sdk] done in {:.1?}", t0.elapsed());
}
