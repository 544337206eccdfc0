//! The binary run bare: outside a checkout it serves the bundled demo with
//! its widgets, and it decides on `/preview` as `serve` does.

use super::*;

/// The binary run in `dir`, with none of the configuration's variables of
/// the test's own environment.
fn bare(dir: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(BIN);
    cmd.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// The binary run where there is no `overlays/` (outside a checkout) serves
/// the bundled demo with its widgets, from overlays built into it, and
/// leaves nothing behind. (Before: a bare demo, and one INFO line.)
#[tokio::test]
async fn the_binary_outside_a_checkout_serves_the_demo_with_its_widgets() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bare(dir.path());
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info");
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let url = gateway.wait_for("the endpoint", RUN_TIMEOUT, |s: Stream, line| {
        support::process::endpoint_url(line).filter(|_| s == Stream::Stdout)
    });
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}"#;
    let (status, headers, _) = support::clients::post_json(&url, &[], init).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = support::clients::post_json(
        &url,
        &[
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
        ],
        list,
    )
    .await;
    assert_eq!(status, 200);
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("\"resourceUri\":\"ui://task-board/"),
        "the demo's widget is on its tools: {body}\n{}",
        gateway.tail(20)
    );
    let written = std::env::temp_dir().join(format!("mcp-ui-gateway-demo-{}", gateway.pid));
    assert!(written.join("demo.toml").exists(), "{}", written.display());
    let status = gateway.terminate(Duration::from_secs(20)).unwrap();
    assert!(status.success());
    assert!(
        !written.exists(),
        "{} is removed at exit",
        written.display()
    );
}

/// The bare binary decides on `/preview` by the rule `serve` follows: on for
/// a loopback address unless `preview = false` says otherwise (before, it
/// forced the preview on, on any address and against the setting).
#[tokio::test]
async fn the_bare_binary_follows_the_preview_setting_as_serve_does() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    for (setting, shown) in [(None, true), (Some("false"), false)] {
        let mut cmd = bare(dir.path());
        cmd.env("MCP_UI_GATEWAY_LISTEN", "127.0.0.1:0");
        if let Some(value) = setting {
            cmd.env("MCP_UI_GATEWAY_PREVIEW", value);
        }
        let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
        let url = gateway.wait_for("the endpoint", RUN_TIMEOUT, |s: Stream, line| {
            support::process::endpoint_url(line).filter(|_| s == Stream::Stdout)
        });
        let base = url.trim_end_matches("/mcp");
        let (status, _, _) =
            support::clients::request_raw(hyper::Method::GET, &format!("{base}/preview"), &[], "")
                .await;
        assert_eq!(status == 200, shown, "preview {setting:?}: {status}");
        let _ = gateway.terminate(Duration::from_secs(20));
    }
}

/// The bare binary takes `serve`'s flags (`mcp-ui-gateway --listen ADDR` is
/// `mcp-ui-gateway serve --listen ADDR`), as the port-in-use message, which
/// names `--listen`, leads a user to try; before, clap answered
/// "unexpected argument '--listen'". A command and flags of the bare form
/// together are a usage error.
#[tokio::test]
async fn the_bare_binary_takes_the_flags_of_serve() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bare(dir.path());
    cmd.args(["--listen", "127.0.0.1:0", "--no-preview"]);
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let url = gateway.wait_for("the endpoint", RUN_TIMEOUT, |s: Stream, line| {
        support::process::endpoint_url(line).filter(|_| s == Stream::Stdout)
    });
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!url.starts_with("http://127.0.0.1:8787/"), "{url}");
    let base = url.trim_end_matches("/mcp");
    let (status, _, _) =
        support::clients::request_raw(hyper::Method::GET, &format!("{base}/preview"), &[], "")
            .await;
    assert_eq!(status, 404, "--no-preview was taken");
    let _ = gateway.terminate(Duration::from_secs(20));

    let help = std::process::Command::new(BIN)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--listen <ADDR>"), "{help}");
    // A flag of `serve` before another command would be ignored: a usage
    // error names it. The log format goes anywhere.
    let mixed = std::process::Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "check", "--offline"])
        .output()
        .unwrap();
    assert_eq!(mixed.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&mixed.stderr).contains("--listen given before `check`"),
        "{mixed:?}"
    );
    let global = std::process::Command::new(BIN)
        .args(["--log-format", "json", "check", "--help"])
        .output()
        .unwrap();
    assert!(global.status.success(), "{global:?}");
}
