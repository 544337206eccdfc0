//! Security properties, each with a test. Covered elsewhere and cited in
//! RELIABILITY.md: Host and Origin checks (`bad_input::dns_rebinding_and_cors`,
//! `server::tests`), sealed session ids that cannot be forged or opened with
//! another key (`session::tests::ids_are_unlinkable_and_unforgeable`,
//! `sessions::two_replicas_with_one_key_serve_one_session_alternately`,
//! `sessions::stdio_sessions_belong_to_their_process`), and symlinks out of
//! the overlay directory (`overlay::tests::symlinks_out_of_the_overlay_directory_are_refused`).

use std::process::{Command, Stdio};
use std::time::Duration;

use hyper::{Method, StatusCode};
use mcp_ui_model::config::Config;
use support::clients::{post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::process::{Proc, Stream, endpoint_url, signal};
use support::upstreams::{HttpFlavor, start_http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"security-test","version":"1"}}}"#;
const BOUND: Duration = Duration::from_secs(30);
/// What the test sends as a bearer token and as the session key: neither may
/// appear in any log line.
const TOKEN: &str = "tok-5ecret-7f3a9c1e2b4d";
const KEY: &str = "5ec12e7ab1e5ec12e7ab1e5ec12e7ab1e5ec12e7ab1e5ec12e7ab1e5ec12e7ab";

#[test]
fn a_non_loopback_bind_is_warned_about_and_loopback_is_not() {
    let at = |listen: &str| Config {
        listen: listen.parse().unwrap(),
        ..Config::default()
    };
    for quiet in ["127.0.0.1:8787", "127.0.0.2:1", "[::1]:8787"] {
        assert_eq!(at(quiet).exposure_warning(), None, "{quiet}");
    }
    for loud in ["0.0.0.0:8787", "[::]:8787", "192.0.2.10:8787"] {
        let w = at(loud)
            .exposure_warning()
            .unwrap_or_else(|| panic!("{loud}"));
        assert!(
            w.contains("non-loopback") && w.contains("allowed_hosts"),
            "{w}"
        );
    }
    // The default is loopback.
    assert_eq!(Config::default().exposure_warning(), None);
}

/// Runs the binary on loopback at trace level in front of `upstream`, with the
/// session key in the environment; returns its address and the process.
fn start_binary(upstream: &str, dir: &std::path::Path) -> (String, Proc) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .current_dir(dir)
        .env("RUST_LOG", "trace")
        .env("MCP_UI_GATEWAY_SESSION_KEY", KEY)
        .env("MCP_UI_GATEWAY_SHUTDOWN_GRACE_SECS", "2");
    let mut proc = Proc::spawn("gateway", &mut cmd);
    let url = proc.wait_for("its endpoint", BOUND, |stream, line| {
        endpoint_url(line).filter(|_| stream == Stream::Stdout)
    });
    (url, proc)
}

#[tokio::test]
async fn tokens_and_the_session_key_are_never_logged() {
    let upstream = start_http(HttpFlavor::StatefulSse).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (url, mut gateway) = start_binary(&upstream.url, dir.path());
    let bearer = format!("Bearer {TOKEN}");
    let (status, headers, body) = post_json(&url, &[("authorization", &bearer)], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    for body in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
    ] {
        let (status, _, _) = post_json(
            &url,
            &[("authorization", &bearer), ("mcp-session-id", &sid)],
            body,
        )
        .await;
        assert!(status.is_success(), "{status}");
    }
    // A refused request with the token is not logged with it either.
    let (status, _, _) = post_json(
        &url,
        &[("authorization", &bearer), ("host", "evil.example")],
        INIT,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(signal("TERM", &[gateway.pid]));
    let (exit, _, log) = gateway
        .finish(BOUND)
        .unwrap_or_else(|e| panic!("the gateway did not exit: {e}"));
    assert!(exit.success(), "exit {exit}\n{log}");
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "trace logging was on:\n{log}"
    );
    assert!(!log.contains(TOKEN), "the bearer token was logged:\n{log}");
    assert!(!log.contains(KEY), "the session key was logged");
    assert!(
        !log.contains("non-loopback"),
        "a loopback bind warns about exposure:\n{log}"
    );
}

/// A public name in `allowed_hosts` keeps the loopback names of a loopback
/// listener (the preview and local clients), and a refused `Host` is logged
/// once, with the setting that accepts it.
#[tokio::test]
async fn allowed_hosts_keeps_loopback_names_and_a_refusal_says_how_to_fix_it() {
    let upstream = start_http(HttpFlavor::StatefulSse).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(&config, "allowed_hosts = [\"gw.example.com\"]\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream.url,
    ])
    .arg("--config")
    .arg(&config)
    .current_dir(dir.path())
    .env("MCP_UI_GATEWAY_SHUTDOWN_GRACE_SECS", "2");
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let url = gateway.wait_for("its endpoint", BOUND, |stream, line| {
        endpoint_url(line).filter(|_| stream == Stream::Stdout)
    });
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    let preview = url.replace("/mcp", "/preview");
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "gw.example.com".to_owned(),
    ] {
        let (status, _, body) = request_raw(Method::GET, &preview, &[("host", &host)], "").await;
        assert_eq!(status, StatusCode::OK, "/preview for Host {host}: {body:?}");
        let (status, _, _) = post_json(&url, &[("host", &host)], INIT).await;
        assert_eq!(status, StatusCode::OK, "the endpoint for Host {host}");
    }
    for _ in 0..3 {
        let (status, _, _) = post_json(&url, &[("host", "evil.example:8787")], INIT).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    assert!(signal("TERM", &[gateway.pid]));
    let (exit, out, log) = gateway
        .finish(BOUND)
        .unwrap_or_else(|e| panic!("the gateway did not exit: {e}"));
    assert!(exit.success(), "exit {exit}\n{log}");
    let said: Vec<&str> = out
        .lines()
        .chain(log.lines())
        .filter(|l| l.contains("evil.example"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "one line for the refused Host:\n{out}\n{log}"
    );
    let line = said[0];
    assert!(
        line.contains("WARN") && line.contains("allowed_hosts") && line.contains("403"),
        "{line}"
    );
}

#[test]
fn configuration_errors_do_not_print_the_session_key() {
    let dir = tempfile::tempdir().unwrap();
    // Right length, not hexadecimal from the 'z' on: invalid.
    let bad = format!("{}z", &KEY[..63]);
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:9/mcp",
        ])
        .current_dir(dir.path())
        .env("MCP_UI_GATEWAY_SESSION_KEY", &bad)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("session_key"),
        "the error names the field: {all}"
    );
    assert!(!all.contains(&KEY[..40]), "the key was printed: {all}");
}

#[tokio::test]
async fn widget_html_is_served_only_as_an_mcp_resource() {
    let mut config = gw::test_config();
    config.overlays = concat!(env!("CARGO_MANIFEST_DIR"), "/overlays").into();
    config.preview = Some(false);
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let widget_marker = "<title>Task board";
    for path in [
        "/",
        "/mcp",
        "/index.html",
        "/widgets/task-board/index.html",
        "/overlays/widgets/task-board/index.html",
        "/task-board/index.html",
        "/ui/task-board",
        "/ui://task-board/index.html",
        "/preview",
        "/preview/",
        "/../overlays/widgets/task-board/index.html",
        "/%2e%2e/overlays/widgets/task-board/index.html",
    ] {
        for accept in ["text/html", "*/*", "text/event-stream"] {
            if path == "/mcp" && accept != "text/html" {
                // The endpoint's stream for a client with no session: events
                // of MCP messages only (it never ends, so only its head is read).
                let (status, headers, _stream) = support::clients::open_sse(
                    Method::GET,
                    &g.url_for(path),
                    &[("accept", accept)],
                    "",
                )
                .await
                .unwrap();
                assert_eq!(status, StatusCode::OK);
                assert_eq!(headers["content-type"], "text/event-stream");
                continue;
            }
            let (status, _, body) =
                request_raw(Method::GET, &g.url_for(path), &[("accept", accept)], "").await;
            let text = String::from_utf8_lossy(&body);
            assert!(
                !text.contains(widget_marker),
                "GET {path} ({accept}) served the widget: {status}"
            );
        }
    }
    // Through MCP it is there: resources/read of the listed URI.
    assert!(
        read_widget(&g.url(), "ui://task-board/")
            .await
            .contains("Task board")
    );
}

/// The first `text` of the resource `resources/list` lists under `prefix`,
/// read through a new session at `url`.
async fn read_widget(url: &str, prefix: &str) -> String {
    let (_, headers, _) = post_json(url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (_, _, body) = post_json(
        url,
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#,
    )
    .await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let uri = v["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["uri"].as_str().filter(|u| u.starts_with(prefix)))
        .expect("the widget is listed")
        .to_owned();
    let read = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{{"uri":"{uri}"}}}}"#
    );
    let (_, _, body) = post_json(url, &[("mcp-session-id", &sid)], read).await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {v}"))
        .to_owned()
}

/// A widget's served files (`/assets/…`): an HTML page of the folder, which
/// the widget's code can reach, is sandboxed (opened, it would otherwise run
/// at the gateway's origin, where `POST /mcp` is same-origin); a file name
/// with a space is written `%20` in the document and found when the browser
/// asks for it so; a `Range` of one span is answered 206, one past the end
/// 416.
#[tokio::test]
async fn widget_files_are_sandboxed_found_by_their_encoded_names_and_ranged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |path: &str, body: &[u8]| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    };
    write("demo.toml", b"[tools.list_tasks]\nwidget = \"app\"\n");
    write("widgets/app/widget.toml", b"entry = \"dist/index.html\"\n");
    write(
        "widgets/app/dist/index.html",
        b"<!doctype html>\n<script type=\"module\" src=\"./assets/index.js\"></script>\n<img src=\"./assets/my%20photo.png\">\n",
    );
    write(
        "widgets/app/dist/assets/index.js",
        b"const help = new URL('./help.html', import.meta.url).href;\nexport { help };\n",
    );
    write(
        "widgets/app/dist/assets/help.html",
        b"<!doctype html><script>fetch('/mcp', { method: 'POST' })</script>",
    );
    let photo: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    write("widgets/app/dist/assets/my photo.png", &photo);

    let mut config = gw::test_config();
    config.overlays = root.to_path_buf();
    config.public_url = Some("https://gw.example.com".into());
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let html = read_widget(&g.url(), "ui://app/").await;
    // The served files' paths, as the document names them.
    let path_of = |file: &str| {
        let end = html
            .find(file)
            .unwrap_or_else(|| panic!("the document names {file}: {html}"))
            + file.len();
        let start = html[..end].rfind("https://gw.example.com").unwrap();
        html[start + "https://gw.example.com".len()..end].to_owned()
    };
    assert!(
        !html.contains("my photo.png"),
        "a space is not written raw in a URL: {html}"
    );
    let photo_path = path_of("my%20photo.png");
    // The page is named by the module, relative to itself.
    let help_path = path_of("dist/assets/index.js").replace("index.js", "help.html");

    let (status, headers, body) = request_raw(Method::GET, &g.url_for(&photo_path), &[], "").await;
    assert_eq!(status, StatusCode::OK, "GET {photo_path}");
    assert_eq!(body.as_ref(), &photo[..]);
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["accept-ranges"], "bytes");
    assert_eq!(headers["content-security-policy"], "sandbox");

    let (status, headers, body) = request_raw(
        Method::GET,
        &g.url_for(&photo_path),
        &[("range", "bytes=100-199")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(headers["content-range"], "bytes 100-199/20000");
    assert_eq!(body.as_ref(), &photo[100..200]);
    let (status, _, body) = request_raw(
        Method::GET,
        &g.url_for(&photo_path),
        &[("range", "bytes=-10")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body.as_ref(), &photo[19_990..]);
    let (status, headers, _) = request_raw(
        Method::GET,
        &g.url_for(&photo_path),
        &[("range", "bytes=20000-")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(headers["content-range"], "bytes */20000");

    let (status, headers, body) = request_raw(Method::GET, &g.url_for(&help_path), &[], "").await;
    assert_eq!(status, StatusCode::OK, "GET {help_path}");
    assert!(String::from_utf8_lossy(&body).contains("fetch('/mcp'"));
    assert_eq!(headers["content-type"], "text/html");
    assert_eq!(
        headers["content-security-policy"], "sandbox",
        "an HTML page of the widget's folder, opened, runs in an opaque origin"
    );
    g.shutdown().await;
}

#[tokio::test]
async fn upstream_headers_cannot_inject_headers_downstream() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = 0;
                // The request head and its small body.
                loop {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                    let text = String::from_utf8_lossy(&buf[..got]);
                    if text.contains("\r\n\r\n") && text.trim_end().ends_with('}') {
                        break;
                    }
                }
                let body = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"odd","version":"0"}}}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\n\
                     content-type: application/json\r\n\
                     content-length: {}\r\n\
                     set-cookie: session=stolen; Path=/\r\n\
                     connection: keep-alive, x-evil\r\n\
                     x-evil: 1\r\n\
                     keep-alive: timeout=999\r\n\
                     upgrade: h2c\r\n\
                     trailer: x-late\r\n\
                     proxy-authenticate: Basic realm=\"x\"\r\n\
                     access-control-allow-origin: *\r\n\
                     access-control-allow-credentials: true\r\n\
                     location: https://evil.example/\r\n\
                     content-security-policy: default-src *\r\n\
                     mcp-session-id: upstream-chosen-id\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    let g = TestGateway::start(vec![gw::http("odd", &upstream)]).await;
    let (status, headers, body) = post_json(&g.url(), &[], INIT).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("\"odd\""), "the body passes: {text}");
    for name in [
        "set-cookie",
        "x-evil",
        "keep-alive",
        "upgrade",
        "trailer",
        "proxy-authenticate",
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "location",
        "content-security-policy",
    ] {
        assert!(!headers.contains_key(name), "{name} passed: {headers:?}");
    }
    let sid = headers["mcp-session-id"].to_str().unwrap();
    assert_ne!(
        sid, "upstream-chosen-id",
        "the session id is sealed, not relayed"
    );
    assert!(sid.len() > 40, "{sid}");
}
