//! End to end in headless Chromium: the gateway binary serves the bundled demo (a legacy
//! task list over stdio) with the overlays in `overlays/`, and `tests/browser/run.mjs`
//! opens a real MCP Apps host page (the official `AppBridge` from
//! `@modelcontextprotocol/ext-apps`) that connects **through the gateway**: it lists the
//! tools, reads the `ui://task-board/…` widget the gateway serves, renders it with the
//! upstream's data, and a click inside the widget calls a tool through the host and the
//! gateway whose result shows in the widget.
//!
//! Three flows: the decoupled pattern (`list_tasks` for the data, then the gateway-owned
//! render tool `show_tasks`) then "Done" on task 2 (`complete_task`); the same render then
//! "Refresh" (the app-only helper `refresh_tasks`, no new render); and `add_task` then
//! typing a title and pressing "Add" (`add_task`, then the widget's own `refresh_tasks`).
//! Each run's screenshot and JSON summary are kept in `target/test-artifacts/`.
//!
//! The peers (node modules in `tests/peers/node_modules`, Debian's `chromium`) come from
//! `bash scripts/install-peers.sh`; when they are missing the tests fail saying so, unless
//! `MCP_UI_SKIP_PEERS=1`, which turns that into a printed note and a skip.
//!
//! Every process started here (the gateway with its demo children, node with its
//! Chromium) is killed by PID, with its descendants, when the test ends, panics
//! included; every wait is bounded; only 127.0.0.1 is used. The tests take turns
//! (one Chromium at a time).

mod app;
mod builtin;
mod demo_flows;
mod hostile;
mod openai_app;
mod sizing;
mod vite;
mod window_openai;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::process::{Proc, Stream, copy_dir, descendants, endpoint_url, signal, wait_gone};

use crate::support;

/// Set to `1` to skip (instead of fail) when the peers are not installed.
const SKIP_ENV: &str = "MCP_UI_SKIP_PEERS";
/// The gateway must print its endpoint line within this.
const READY_LIMIT: Duration = Duration::from_secs(30);
/// run.mjs bounds itself to this many seconds (every wait inside is bounded too)...
const DRIVER_OWN_TIMEOUT_S: &str = "60";
/// ...and is killed if it has not exited after this.
const DRIVER_LIMIT: Duration = Duration::from_secs(90);
/// The gateway must exit after SIGTERM within this.
const STOP_LIMIT: Duration = Duration::from_secs(20);

/// This test's turn: one Chromium at a time (2 cores), and none beside the suite's
/// other heavy tests (`support::peers::HEAVY`).
fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    support::peers::HEAVY.blocking_lock()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/test-artifacts` (next to `target/tmp`, so a custom target dir is respected).
fn artifacts_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp
        .parent()
        .map(|target| target.join("test-artifacts"))
        .unwrap_or_else(|| root().join("target/test-artifacts"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

// ---------------------------------------------------------------------------------------
// Peers

/// What run.mjs needs and is not installed (empty when all is there).
fn missing_peers() -> Vec<String> {
    let modules = root().join("tests/peers/node_modules");
    let mut missing: Vec<String> = [
        "@modelcontextprotocol/ext-apps/package.json",
        "@modelcontextprotocol/client/package.json",
        "esbuild/package.json",
        "playwright-core/package.json",
    ]
    .iter()
    .map(|p| modules.join(p))
    .filter(|p| !p.exists())
    .map(|p| p.display().to_string())
    .collect();
    let on_path = |program: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !on_path("node") {
        missing.push("node (on PATH)".into());
    }
    let chromium_ok = match std::env::var_os("CHROMIUM") {
        Some(path) => Path::new(&path).exists(),
        None => on_path("chromium"),
    };
    if !chromium_ok {
        missing.push("chromium (on PATH, or $CHROMIUM)".into());
    }
    missing
}

/// `true` to go on; `false` to skip (peers missing and `MCP_UI_SKIP_PEERS=1`);
/// a panic telling how to install them otherwise.
fn peers_ready() -> bool {
    let missing = missing_peers();
    if missing.is_empty() {
        return true;
    }
    if std::env::var(SKIP_ENV).as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED: browser peers missing ({}); {SKIP_ENV}=1",
            missing.join(", ")
        );
        return false;
    }
    panic!(
        "browser peers missing: {}.\nRun `bash scripts/install-peers.sh` (npm packages \
         pinned in tests/peers/package.json and Debian's chromium), or set {SKIP_ENV}=1 \
         to skip these tests.",
        missing.join(", ")
    );
}

// ---------------------------------------------------------------------------------------
// The gateway and the driver

/// The gateway binary on 127.0.0.1:0 serving the bundled demo with `overlays/`, ready.
fn start_gateway() -> (Proc, String) {
    start_gateway_with(&root().join("overlays"))
}

/// The gateway binary on 127.0.0.1:0 serving the bundled demo with the overlay
/// directory `overlays`, ready.
fn start_gateway_with(overlays: &Path) -> (Proc, String) {
    start_gateway_env(overlays, "127.0.0.1:0", &[])
}

/// [`start_gateway_with`], listening on `listen`, with configuration from `env`.
fn start_gateway_env(overlays: &Path, listen: &str, env: &[(&str, &str)]) -> (Proc, String) {
    start_gateway_config(&root().join("config/gateway.toml"), overlays, listen, env)
}

/// The gateway serving `config` with `overlays` on `listen`, with `env` and
/// none of the test's own `MCP_UI_GATEWAY_*` variables; its first endpoint.
fn start_gateway_config(
    config: &Path,
    overlays: &Path,
    listen: &str,
    env: &[(&str, &str)],
) -> (Proc, String) {
    let root = root();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--listen", listen, "--overlays"])
        .arg(overlays)
        .current_dir(&root);
    // The gateway reads every MCP_UI_GATEWAY_* variable as configuration (and rejects
    // unknown ones, such as this test's own switch): keep the run hermetic.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "info");
    }
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let url = gateway.wait_for("`MCP endpoint: ` line on stdout", READY_LIMIT, |s, line| {
        endpoint_url(line).filter(|_| s == Stream::Stdout)
    });
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "gateway endpoint line gave an unexpected URL {url:?}\n{}",
        gateway.tail(20)
    );
    (gateway, url)
}

/// A gateway with one fixture server (stdio) per `(name, overlay)`, mounted
/// as `name` with that overlay file: its directory, the gateway, and the
/// base URL its mounts are under (`{base}/{name}/mcp`).
fn fixture_mounts(mounts: &[(&str, String)]) -> (tempfile::TempDir, Proc, String) {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    let fixture = env!("CARGO_BIN_EXE_mcp-fixture-server");
    let mut config = String::new();
    for (name, overlay) in mounts {
        config.push_str(&format!(
            "[[upstream]]\nname = \"{name}\"\ncommand = {fixture:?}\n"
        ));
        std::fs::write(overlays.join(format!("{name}.toml")), overlay).unwrap();
    }
    let file = dir.path().join("gw.toml");
    std::fs::write(&file, config).unwrap();
    let (gateway, url) = start_gateway_config(&file, &overlays, "127.0.0.1:0", &[]);
    let first = format!("/{}/mcp", mounts[0].0);
    let base = url.split(&first).next().unwrap_or_default().to_owned();
    assert!(!base.is_empty() && !base.contains("/mcp"), "{url}");
    (dir, gateway, base)
}

/// SIGTERM; the gateway must exit 0 and leave none of its demo children running.
fn stop_gateway(mut gateway: Proc) {
    let children = descendants(gateway.pid);
    let status = gateway
        .terminate(STOP_LIMIT)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        status.success(),
        "gateway exited with {status} after SIGTERM (expected 0)\n{}",
        gateway.tail(30)
    );
    let left = wait_gone(children, Duration::from_secs(5));
    if !left.is_empty() {
        signal("KILL", &left);
        panic!("the gateway exited but left its children {left:?} running (killed now)");
    }
}

/// Runs `node tests/browser/run.mjs --mcp URL …ARGS --screenshot <artifacts>/<name>.png`,
/// keeps its summary as `<name>.json`, and returns the summary of a successful run.
fn run_driver(
    gateway: &mut Proc,
    url: &str,
    name: &str,
    args: &[&str],
) -> (Value, PathBuf, Duration) {
    let artifacts = artifacts_dir();
    let screenshot = artifacts.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&screenshot);
    let mut cmd = Command::new("node");
    cmd.arg(root().join("tests/browser/run.mjs"))
        .args(["--mcp", url])
        .args(args)
        .args(["--timeout", DRIVER_OWN_TIMEOUT_S, "--screenshot"])
        .arg(&screenshot)
        .current_dir(root());
    let started = Instant::now();
    let mut driver = Proc::spawn(format!("run.mjs ({name})"), &mut cmd);
    let (status, stdout, _) = driver
        .finish(DRIVER_LIMIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", gateway.tail(30)));
    let took = started.elapsed();
    let summary_file = artifacts.join(format!("{name}.json"));
    let _ = std::fs::write(&summary_file, &stdout);
    let summary: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "run.mjs ({name}) exited with {status} without a JSON summary ({e})\n{}\n{}",
            driver.tail(40),
            gateway.tail(30)
        )
    });
    if status.code() == Some(2) {
        panic!(
            "run.mjs ({name}) exited 2 (usage or a missing peer; run `bash \
             scripts/install-peers.sh`)\n{}",
            driver.tail(20)
        );
    }
    assert!(
        status.success() && summary["ok"] == Value::Bool(true),
        "run.mjs ({name}) failed through the gateway ({status}): {}\n  summary: {}\n{}\n{}",
        summary["reason"],
        summary_file.display(),
        driver.tail(30),
        gateway.tail(30)
    );
    assert!(
        screenshot.metadata().is_ok_and(|m| m.len() > 1000),
        "run.mjs ({name}) wrote no screenshot at {}",
        screenshot.display()
    );
    (summary, screenshot, took)
}

// ---------------------------------------------------------------------------------------
// Checks on the driver's summary

fn texts(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// The page errors, console errors and CSP violations the browser reported.
fn console_errors(summary: &Value) -> Vec<&Value> {
    summary["console"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter(|m| {
                    m["type"] == "pageerror"
                        || m["type"] == "error"
                        || texts(&m["text"]).contains("Content Security Policy")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What every run through the gateway must show, whatever the flow: the host talked to
/// the demo through the gateway, read the gateway's versioned widget resource with the
/// MCP Apps media type and its UI `_meta`, the widget initialised over the bridge, and
/// the browser saw no page error or CSP violation.
fn check_common(summary: &Value, tool: &str) {
    let host = &summary["host"];
    let context = || serde_json::to_string_pretty(summary).unwrap_or_default();
    assert_eq!(summary["mode"], "server", "{}", context());
    assert_eq!(
        host["server"]["name"],
        "task-list-demo",
        "the host reached the demo upstream through the gateway\n{}",
        context()
    );
    assert_eq!(host["tool"]["name"], tool, "{}", context());
    let resource_uri = texts(&host["tool"]["_meta"]["ui"]["resourceUri"]);
    assert!(
        resource_uri.starts_with("ui://task-board/") && resource_uri.ends_with(".html"),
        "the tool carries the gateway's versioned widget URI, got {resource_uri:?}\n{}",
        context()
    );
    assert_eq!(
        host["tool"]["_meta"]["ui/resourceUri"],
        resource_uri.as_str()
    );
    assert_eq!(
        host["tool"]["_meta"]["openai/outputTemplate"],
        resource_uri.as_str()
    );
    assert_eq!(host["resource"]["uri"], resource_uri.as_str());
    assert_eq!(host["resource"]["mimeType"], "text/html;profile=mcp-app");
    assert!(
        host["resource"]["htmlLength"].as_u64().unwrap_or(0) > 1000,
        "the widget HTML (assets inlined) came through\n{}",
        context()
    );
    assert_eq!(
        host["resource"]["meta"]["ui"]["prefersBorder"],
        true,
        "the widget manifest's _meta reached the host\n{}",
        context()
    );
    assert_eq!(host["app_info"]["name"], "task-board", "{}", context());
    assert_eq!(host["initialized"], true, "{}", context());
    assert_eq!(host["tool_result_sent"], true, "{}", context());
    let structured = &host["tool_result"]["structuredContent"];
    assert!(
        structured.is_object(),
        "the initial tool result carries the structuredContent the gateway adds\n{}",
        context()
    );
    // Every MCP request of the page went to the gateway and succeeded.
    let http = summary["http"].as_array().cloned().unwrap_or_default();
    for wanted in ["initialize", "tools/list", "resources/read", "tools/call"] {
        assert!(
            http.iter().any(|e| e["rpc"] == wanted),
            "no {wanted} went through the gateway\n{}",
            context()
        );
    }
    for exchange in &http {
        let status = exchange["status"].as_u64().unwrap_or(0);
        assert!(
            (200..300).contains(&status),
            "an MCP exchange through the gateway failed: {exchange}\n{}",
            context()
        );
    }
    let bad_console = console_errors(summary);
    assert!(
        bad_console.is_empty(),
        "the browser reported errors: {bad_console:?}\n{}",
        context()
    );
    let errors = host["errors"].as_array().map_or(0, Vec::len);
    assert_eq!(errors, 0, "the host logged errors\n{}", context());
}

/// The decoupled pattern as the host saw it: the data tool (`list_tasks`) is
/// listed and answers without any template; the gateway-owned render tool
/// (`show_tasks`) is marked as such and its result alone carries the template.
fn check_decoupled(summary: &Value) {
    let host = &summary["host"];
    let context = || serde_json::to_string_pretty(summary).unwrap_or_default();
    assert_eq!(host["data_tool"]["name"], "list_tasks", "{}", context());
    assert!(
        host["data_tool"]["_meta"]["ui"]["resourceUri"].is_null()
            && host["data_tool"]["_meta"]["openai/outputTemplate"].is_null(),
        "the data tool stays a data tool: no template\n{}",
        context()
    );
    assert!(
        host["data_result"]["_meta"]["ui"]["resourceUri"].is_null(),
        "the data call's result carries no template\n{}",
        context()
    );
    assert_eq!(
        host["tool"]["_meta"]["io.github.mcp-ui-gateway/renderTool"]["dataTools"],
        serde_json::json!(["list_tasks"]),
        "{}",
        context()
    );
    assert_eq!(
        host["tool_result"]["structuredContent"],
        host["data_result"]["structuredContent"],
        "the render tool echoes the data it was given\n{}",
        context()
    );
    assert_eq!(
        host["tool_result"]["_meta"]["ui"]["resourceUri"],
        host["tool"]["_meta"]["ui"]["resourceUri"],
        "the render call's result carries the template\n{}",
        context()
    );
}

fn view_calls(summary: &Value) -> Vec<(String, Value)> {
    summary["host"]["view_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| (texts(&c["name"]), c["arguments"].clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `overlays/` copied into `dir/overlays`, with `from` replaced by `to` in its
/// `demo.toml` (which must hold `from`).
fn demo_overlays_with(dir: &Path, from: &str, to: &str) -> PathBuf {
    let overlays = dir.join("overlays");
    copy_dir(&root().join("overlays"), &overlays);
    let demo = std::fs::read_to_string(overlays.join("demo.toml")).unwrap();
    assert!(demo.contains(from), "overlays/demo.toml holds {from:?}");
    std::fs::write(overlays.join("demo.toml"), demo.replace(from, to)).unwrap();
    overlays
}

/// The height the View last reported to the host (0 when none).
fn reported_height(summary: &Value) -> f64 {
    summary["host"]["sizes"]
        .as_array()
        .and_then(|s| s.last())
        .and_then(|s| s["height"].as_f64())
        .unwrap_or(0.0)
}

/// No page error, console error or CSP violation, and no error the host logged.
fn assert_no_errors(summary: &Value, what: &str) {
    let bad_console = console_errors(summary);
    assert!(
        bad_console.is_empty(),
        "{what}: browser errors: {bad_console:?}"
    );
    let logged = &summary["host"]["errors"];
    assert!(
        logged.as_array().is_none_or(Vec::is_empty),
        "{what}: the host logged errors: {logged}"
    );
}

// ---------------------------------------------------------------------------------------
// Tests
