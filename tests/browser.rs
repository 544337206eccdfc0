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

#[path = "browser/openai_app.rs"]
mod openai_app;
mod support;
#[path = "browser/vite.rs"]
mod vite;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::process::{Proc, Stream, copy_dir, descendants, endpoint_url, signal, wait_gone};

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

/// One Chromium at a time (2 cores).
static TURN: Mutex<()> = Mutex::new(());

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

#[test]
fn done_on_task_2_completes_it_through_the_gateway_and_the_widget_shows_it() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let (mut gateway, url) = start_gateway();
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        "browser-list-tasks-complete",
        &[
            "--data-tool",
            "list_tasks",
            "--tool",
            "show_tasks",
            "--click",
            r#"[data-task-id="2"] button[data-action="complete"]"#,
            "--expect",
            "Completed \u{201c}Write the release notes\u{201d}.",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    check_common(&summary, "show_tasks");
    check_decoupled(&summary);

    // The widget rendered the upstream's data: the seeded tasks, as list_tasks returned
    // them (the gateway's structuredContent) and show_tasks echoed them, before the click.
    let initial = &summary["host"]["tool_result"]["structuredContent"]["tasks"];
    let titles: Vec<String> = initial
        .as_array()
        .map(|tasks| tasks.iter().map(|t| texts(&t["title"])).collect())
        .unwrap_or_default();
    assert_eq!(
        titles,
        [
            "Water the plants",
            "Write the release notes",
            "Book the team dinner"
        ],
        "list_tasks through the gateway returned the demo's seeded tasks\n{}",
        context()
    );
    let view_text = texts(&summary["view_text"]);
    for title in &titles {
        assert!(
            view_text.contains(title.as_str()),
            "the widget shows {title:?}: {view_text:?}"
        );
    }

    // The click made the widget call complete_task {id: 2} through the host and the
    // gateway; the upstream's answer (task 2 now done) is what the widget shows.
    let call = &summary["click"]["view_call"];
    assert_eq!(call["name"], "complete_task", "{}", context());
    assert_eq!(call["arguments"], serde_json::json!({ "id": 2 }));
    assert_eq!(call["is_error"], false, "{}", context());
    let result: Value = serde_json::from_str(&texts(&call["result_text"])).unwrap_or_default();
    assert_eq!(
        result,
        serde_json::json!({ "id": 2, "title": "Write the release notes", "done": true }),
        "complete_task's result came from the upstream\n{}",
        context()
    );
    let calls = view_calls(&summary);
    let completed = summary["host"]["view_calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["name"] == "complete_task"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        completed["result"]["structuredContent"]["done"], true,
        "the gateway shaped the click's result too; view calls: {calls:?}"
    );
    assert!(
        view_text.contains("Completed \u{201c}Write the release notes\u{201d}.")
            && view_text.contains("1 open \u{b7} 2 done"),
        "the widget shows the click's result: {view_text:?}"
    );

    stop_gateway(gateway);
    eprintln!(
        "browser list_tasks + Done on task 2: driver {:.1} s, test {:.1} s; screenshot {}",
        took.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        screenshot.display()
    );
}

#[test]
fn add_from_the_widget_adds_through_the_gateway_and_the_widget_lists_it() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let (mut gateway, url) = start_gateway();
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        "browser-add-task",
        &[
            "--tool",
            "add_task",
            "--args",
            r#"{"title":"Pack the demo"}"#,
            "--fill",
            "#new-title",
            "--value",
            "Buy oat milk",
            "--click",
            "#add-button",
            "--expect",
            "Added \u{201c}Buy oat milk\u{201d}.",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    check_common(&summary, "add_task");
    assert_eq!(
        summary["host"]["tool_result"]["structuredContent"],
        serde_json::json!({ "id": 4, "title": "Pack the demo", "done": false }),
        "the host's add_task went through the gateway to the upstream\n{}",
        context()
    );
    let call = &summary["click"]["view_call"];
    assert_eq!(call["name"], "add_task", "{}", context());
    assert_eq!(
        call["arguments"],
        serde_json::json!({ "title": "Buy oat milk" })
    );
    assert_eq!(call["is_error"], false, "{}", context());
    let result: Value = serde_json::from_str(&texts(&call["result_text"])).unwrap_or_default();
    assert_eq!(
        result,
        serde_json::json!({ "id": 5, "title": "Buy oat milk", "done": false }),
        "{}",
        context()
    );
    // After adding, the widget lists the tasks again (its app-only helper refresh_tasks,
    // through the gateway) and
    // shows both new ones next to the seeded ones.
    let calls: Vec<String> = view_calls(&summary).into_iter().map(|(n, _)| n).collect();
    assert!(
        calls.ends_with(&["add_task".to_owned(), "refresh_tasks".to_owned()]),
        "the widget refreshed after adding: {calls:?}"
    );
    let view_text = texts(&summary["view_text"]);
    for title in [
        "Water the plants",
        "Write the release notes",
        "Book the team dinner",
        "Pack the demo",
        "Buy oat milk",
    ] {
        assert!(
            view_text.contains(title),
            "the widget shows {title:?}: {view_text:?}"
        );
    }
    assert!(
        view_text.contains("4 open \u{b7} 1 done"),
        "the widget's summary counts the upstream's tasks: {view_text:?}"
    );

    stop_gateway(gateway);
    eprintln!(
        "browser add_task + Add: driver {:.1} s, test {:.1} s; screenshot {}",
        took.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        screenshot.display()
    );
}

#[test]
fn refresh_in_the_rendered_board_calls_the_app_only_helper_without_remounting() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let (mut gateway, url) = start_gateway();
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        "browser-show-tasks-refresh",
        &[
            "--data-tool",
            "list_tasks",
            "--tool",
            "show_tasks",
            "--click",
            "#refresh-button",
            "--expect",
            "Refreshed: 3 tasks.",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    check_common(&summary, "show_tasks");
    check_decoupled(&summary);
    let call = &summary["click"]["view_call"];
    assert_eq!(call["name"], "refresh_tasks", "{}", context());
    assert_eq!(call["is_error"], false, "{}", context());
    let refreshed = summary["host"]["view_calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["name"] == "refresh_tasks"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        refreshed["result"]["structuredContent"]["tasks"]
            .as_array()
            .map(Vec::len),
        Some(3),
        "the helper's result came from the upstream, shaped by the gateway\n{}",
        context()
    );
    // One View, initialized once: the refresh updated it in place.
    let bridge = &summary["host"]["bridge"];
    let initializes: u64 = bridge
        .as_object()
        .map(|counts| {
            counts
                .iter()
                .filter(|(k, _)| k.ends_with("ui/initialize"))
                .filter_map(|(_, n)| n.as_u64())
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(
        initializes,
        1,
        "the View was not mounted again\n{}",
        context()
    );
    assert!(
        summary["host"]["view_calls"]
            .as_array()
            .is_some_and(|calls| calls.iter().all(|c| c["name"] != "show_tasks")),
        "the refresh did not render again\n{}",
        context()
    );
    stop_gateway(gateway);
    eprintln!(
        "browser show_tasks + Refresh: driver {:.1} s, test {:.1} s; screenshot {}",
        took.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        screenshot.display()
    );
}

/// A widget written against ChatGPT's `window.openai` only (it never sends
/// `ui/initialize`), attached to the demo's `complete_task` by an overlay,
/// in an MCP Apps host: the gateway serves it with the script implementing
/// `window.openai` on `ui/*`, so the AppBridge host initialises it, its
/// `toolInput` and `toolOutput` show, a host theme change reaches
/// `window.openai.theme`, its button's `callTool` goes through the host and
/// the gateway and its result shows, its size is reported, and the console
/// is clean. (Before: no handshake, the host gave up after 20 s.)
#[test]
fn a_window_openai_widget_runs_in_an_mcp_apps_host_through_the_bridge() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let overlays = demo_overlays_with(
        dir.path(),
        "[tools.complete_task]\nwidget = \"task-board\"",
        "[tools.complete_task]\nwidget = \"openai-only\"",
    );
    copy_dir(
        &root().join("tests/preview/openai-only"),
        &overlays.join("widgets/openai-only"),
    );
    let (mut gateway, url) = start_gateway_with(&overlays);
    let (summary, _, _) = run_driver(
        &mut gateway,
        &url,
        "browser-openai-widget",
        &[
            "--tool",
            "complete_task",
            "--args",
            r#"{"id":3}"#,
            "--switch-theme",
            "dark",
            "--click",
            "#refresh",
            "--expect",
            "3 tasks",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let host = &summary["host"];
    assert_eq!(host["app_info"]["name"], "window.openai", "{}", context());
    assert_eq!(host["initialized"], true, "{}", context());
    let view_text = texts(&summary["view_text"]);
    for shown in [
        "Book the team dinner done=true",
        "theme=dark",
        r#"input={"id":3}"#,
        "3 tasks",
    ] {
        assert!(
            view_text.contains(shown),
            "{shown} in {view_text:?}\n{}",
            context()
        );
    }
    assert_eq!(summary["click"]["view_call"]["name"], "refresh_tasks");
    let height = reported_height(&summary);
    assert!(
        height > 50.0 && height < 400.0,
        "the View reported its content's height, got {height}\n{}",
        context()
    );
    assert_no_errors(&summary, "complete_task");
    stop_gateway(gateway);
}

/// Widgets size themselves to their content, down as well as up: in a frame
/// 900 px tall, a built-in table of the demo's three tasks and the time
/// example's clock (`examples/time`, in front of mcp-server-time) each report
/// their content's height, and the host shrinks the frame to it. (Before:
/// both reported the document's scroll height, never below the frame's: 900.)
#[test]
fn widgets_in_a_tall_frame_report_their_contents_height() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let overlays = demo_overlays_with(
        dir.path(),
        "[tools.list_tasks]\n",
        "[tools.list_tasks]\nwidget = \"builtin:table\"\n",
    );
    copy_dir(&root().join("examples/time/overlays"), &overlays);
    let python = root().join("tests/peers/.venv/bin/python");
    let config = dir.path().join("gw.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"demo\"\ncommand = {:?}\nargs = [\"demo-server\"]\n\n\
             [[upstream]]\nname = \"time\"\ncommand = {:?}\nargs = [\"-m\", \"mcp_server_time\"]\n",
            env!("CARGO_BIN_EXE_mcp-ui-gateway"),
            python.display().to_string()
        ),
    )
    .unwrap();
    let (mut gateway, url) = start_gateway_config(&config, &overlays, "127.0.0.1:0", &[]);
    let base = url.trim_end_matches("/demo/mcp").to_owned();
    for (mount, tool, args, shown) in [
        ("demo", "list_tasks", "{}", "Write the release notes"),
        ("time", "get_current_time", r#"{"timezone":"UTC"}"#, "UTC"),
    ] {
        let (summary, _, _) = run_driver(
            &mut gateway,
            &format!("{base}/{mount}/mcp"),
            &format!("browser-tall-frame-{mount}"),
            &[
                "--tool",
                tool,
                "--args",
                args,
                "--frame-height",
                "900",
                "--expect",
                shown,
            ],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        let height = reported_height(&summary);
        assert!(
            height > 40.0 && height < 400.0,
            "{tool}: the View reported its content's height in a 900 px frame, got {height}\n{}",
            context()
        );
        assert_no_errors(&summary, tool);
        eprintln!("browser {tool} in a 900 px frame: reported {height} px");
    }
    stop_gateway(gateway);
}

/// A built-in widget, no HTML written: the demo's `list_tasks` (JSON text, shaped into
/// `structuredContent`) gets `widget = "builtin:table"` from a three-key overlay. Through
/// the gateway the host reads the compiled `ui://builtin.table.…` resource, the table
/// shows the upstream's rows, a host-context change to dark turns the View dark, and
/// clicking the Title header sorts the rows by title (and says so).
#[test]
fn builtin_table_renders_the_rows_sorts_on_click_and_follows_the_dark_theme() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let overlays = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        overlays.path().join("demo.toml"),
        r#"[tools.list_tasks]
widget = "builtin:table"
result = { structured_from_text = true }

[tools.list_tasks.view]
heading = "Tasks"
columns = ["title", { key = "done", title = "Done", format = "boolean" }, "id"]
"#,
    )
    .expect("write the overlay");
    let (mut gateway, url) = start_gateway_with(overlays.path());
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        "browser-builtin-table",
        &[
            "--tool",
            "list_tasks",
            "--switch-theme",
            "dark",
            "--click",
            "th:nth-child(1) button",
            "--expect",
            "Sorted by Title, ascending.",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let host = &summary["host"];
    assert_eq!(host["server"]["name"], "task-list-demo", "{}", context());
    let uri = texts(&host["tool"]["_meta"]["ui"]["resourceUri"]);
    assert!(
        uri.starts_with("ui://builtin.table.") && uri.ends_with(".html"),
        "list_tasks carries the built-in widget's versioned URI, got {uri:?}\n{}",
        context()
    );
    assert_eq!(host["tool"]["_meta"]["openai/outputTemplate"], uri.as_str());
    assert_eq!(host["resource"]["uri"], uri.as_str());
    assert_eq!(host["resource"]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        host["resource"]["meta"]["ui"]["csp"],
        serde_json::json!({ "connectDomains": [], "resourceDomains": [] }),
        "the built-in widget loads nothing from the network\n{}",
        context()
    );
    let length = host["resource"]["htmlLength"].as_u64().unwrap_or(0);
    assert!(
        (1000..=20 * 1024).contains(&length),
        "the document is within its budget: {length} bytes"
    );
    assert_eq!(host["app_info"]["name"], "builtin-table", "{}", context());
    assert_eq!(host["initialized"], true, "{}", context());
    assert!(
        host["size_changes"].as_u64().unwrap_or(0) > 0,
        "the View reported its size\n{}",
        context()
    );

    // The rows, sorted by title after the click (they came in id order).
    let view_text = texts(&summary["view_text"]);
    let at = |title: &str| {
        view_text
            .find(title)
            .unwrap_or_else(|| panic!("the table shows {title:?}: {view_text:?}"))
    };
    let (book, water, write) = (
        at("Book the team dinner"),
        at("Water the plants"),
        at("Write the release notes"),
    );
    assert!(
        book < water && water < write,
        "sorted by title: {view_text:?}"
    );
    for header in ["Title", "Done", "Id"] {
        assert!(view_text.contains(header), "header {header}: {view_text:?}");
    }
    assert!(
        view_text.contains("No"),
        "done = false shows as No: {view_text:?}"
    );

    // Dark, after the host said so.
    let style = &summary["view_style"];
    assert_eq!(style["theme"], "dark", "{}", context());
    assert_eq!(style["color_scheme"], "dark", "{}", context());
    assert_eq!(
        style["background"],
        "rgb(23, 25, 28)",
        "the dark background applies\n{}",
        context()
    );
    let bad_console = console_errors(&summary);
    assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");

    stop_gateway(gateway);
    eprintln!(
        "browser builtin:table + sort + dark: driver {:.1} s, test {:.1} s; screenshot {}",
        took.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        screenshot.display()
    );
}

/// The demo's own built-in widget: the render tool `task_table` (overlays/demo.toml)
/// shows list_tasks' result in a `builtin:table`. Its Complete button on "Book the team
/// dinner" calls `complete_task` through the host (no confirmation: the overlay says it
/// is not destructive), then the table refreshes through the app-only `refresh_tasks` and
/// shows the task done.
#[test]
fn builtin_table_action_completes_a_task_and_refreshes_through_the_app_only_tool() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let (mut gateway, url) = start_gateway();
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        "browser-builtin-actions",
        &[
            "--data-tool",
            "list_tasks",
            "--tool",
            "task_table",
            "--count",
            "tbody tr",
            "--click",
            "button[aria-label='Complete: Book the team dinner']",
            "--expect",
            "Complete: done.",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let host = &summary["host"];
    let uri = texts(&host["tool"]["_meta"]["ui"]["resourceUri"]);
    assert!(
        uri.starts_with("ui://builtin.table."),
        "the render tool carries its built-in widget: {uri:?}\n{}",
        context()
    );
    assert_eq!(summary["count"], 3, "three rows\n{}", context());
    let calls = view_calls(&summary);
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["complete_task", "refresh_tasks"],
        "the action, then the refresh\n{}",
        context()
    );
    assert_eq!(calls[0].1, serde_json::json!({ "id": 3 }), "{}", context());
    let refreshed = host["view_calls"][1]["result"]["structuredContent"]["tasks"].clone();
    let book = refreshed
        .as_array()
        .and_then(|tasks| tasks.iter().find(|t| t["id"] == 3))
        .cloned()
        .unwrap_or_default();
    assert_eq!(book["done"], true, "{}", context());
    // The refreshed row says so, in the table the View kept.
    let view_text = texts(&summary["view_text"]);
    let row = view_text
        .lines()
        .find(|l| l.contains("Book the team dinner"))
        .unwrap_or_default();
    assert!(row.contains("Yes"), "the row shows Done: {view_text:?}");
    assert!(
        view_text.find("Book the team dinner") < view_text.find("Water the plants"),
        "still sorted by title: {view_text:?}"
    );
    let bad_console = console_errors(&summary);
    assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    stop_gateway(gateway);
    eprintln!(
        "browser builtin:table action + refresh: driver {:.1} s, test {:.1} s; screenshot {}",
        took.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        screenshot.display()
    );
}

/// A list whose action calls a tool with no annotations (so, per MCP, possibly
/// destructive) asks first, inline: the first click shows the question, Yes calls the
/// tool, and the list refreshes by calling its own tool again. A chart of the same data
/// draws one bar per task.
#[test]
fn builtin_actions_ask_before_a_destructive_call_and_charts_draw_their_records() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let overlays = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        overlays.path().join("demo.toml"),
        r#"[tools.list_tasks]
widget = "builtin:list"
result = { structured_from_text = true }
view = { primary = "title", actions = [{ label = "Complete", tool = "complete_task", arguments = { id = "/id" } }] }

[tools.refresh_tasks]
widget = "builtin:chart"
result = { structured_from_text = true }
view = { heading = "Task ids", x = "title", y = [{ key = "id", title = "Id", format = "number" }] }
"#,
    )
    .expect("write the overlay");
    let (mut gateway, url) = start_gateway_with(overlays.path());
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        "browser-builtin-confirm",
        &[
            "--tool",
            "list_tasks",
            "--click",
            "button[aria-label='Complete: Write the release notes']",
            "--then-click",
            ".confirm button.primary",
            "--expect",
            "Complete: done.",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let calls = view_calls(&summary);
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["complete_task", "list_tasks"],
        "confirmed, called, refreshed by the widget's own tool\n{}",
        context()
    );
    assert_eq!(calls[0].1, serde_json::json!({ "id": 2 }), "{}", context());
    let bad_console = console_errors(&summary);
    assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    eprintln!(
        "browser builtin:list confirm: driver {:.1} s; screenshot {}",
        took.as_secs_f64(),
        screenshot.display()
    );

    let (summary, screenshot, _) = run_driver(
        &mut gateway,
        &url,
        "browser-builtin-chart",
        &["--tool", "refresh_tasks", "--count", "svg rect"],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    assert_eq!(summary["count"], 3, "one bar per task\n{}", context());
    let view_text = texts(&summary["view_text"]);
    assert!(view_text.contains("Task ids"), "{view_text:?}");
    let bad_console = console_errors(&summary);
    assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    stop_gateway(gateway);
    eprintln!(
        "browser builtin:chart: test {:.1} s; screenshot {}",
        started.elapsed().as_secs_f64(),
        screenshot.display()
    );
}

// ---------------------------------------------------------------------------------------
// An app endpoint: a widget calling its own server's tool by its own name

/// The demo (its tools prefixed `demo_` in the app) and mcp-server-time as one app
/// (`[[app]]`): the board renders from the app's listing, and the widget's click calls
/// `complete_task`, the demo's own name, which the app routes to the demo.
#[test]
fn a_widget_in_an_app_calls_its_own_servers_tool_by_its_own_name() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let python = root.join("tests/peers/.venv/bin/python");
    let config = format!(
        "[[upstream]]\nname = \"demo\"\ncommand = {bin:?}\nargs = [\"demo-server\"]\n\
         [[upstream]]\nname = \"time\"\ncommand = {python:?}\nargs = [\"-m\", \"mcp_server_time\"]\n\
         [[app]]\nname = \"suite\"\nupstreams = [{{ upstream = \"demo\", prefix = \"demo_\" }}, \"time\"]\n",
        bin = env!("CARGO_BIN_EXE_mcp-ui-gateway"),
        python = python.display().to_string(),
    );
    let file = dir.path().join("gw.toml");
    std::fs::write(&file, config).unwrap();
    let (mut gateway, url) =
        start_gateway_config(&file, &root.join("overlays"), "127.0.0.1:0", &[]);
    let base = url.split("/demo/mcp").next().unwrap_or_default().to_owned();
    let app_url = format!("{base}/suite/mcp");
    let (summary, _, _) = run_driver(
        &mut gateway,
        &app_url,
        "browser-app-widget-own-name",
        &[
            "--data-tool",
            "demo_list_tasks",
            "--tool",
            "demo_show_tasks",
            "--click",
            r#"[data-task-id="2"] button[data-action="complete"]"#,
            "--expect",
            "Completed \u{201c}Write the release notes\u{201d}.",
            "--expect-call",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let call = &summary["click"]["view_call"];
    assert_eq!(call["name"], "complete_task", "{}", context());
    assert_eq!(call["is_error"], false, "{}", context());
    assert!(
        texts(&call["result_text"]).contains("\"done\":true"),
        "{}",
        context()
    );
    stop_gateway(gateway);
}

// ---------------------------------------------------------------------------------------
// Built-in widgets against content chosen to break them

/// A built-in widget with nothing to show says why when the result tells:
/// a table over a result with two lists and no `view.data` names both
/// pointers, and a `view.data` that points at nothing is named.
#[test]
fn a_builtin_widget_with_nothing_to_show_says_why() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let table = |view: &str| {
        format!(
            "[tools.echo]\nwidget = \"builtin:table\"\nresult = {{ structured_from_text = true }}\n{view}"
        )
    };
    let mounts = [
        ("graph", table("")),
        ("pointer", table("view = { data = \"/nodes\" }\n")),
    ];
    let (_dir, mut gateway, base) = fixture_mounts(&mounts);
    let graph = r#"{"entities":[{"name":"a"}],"relations":[{"from":"a","to":"b"}]}"#;
    let args = serde_json::json!({ "text": graph }).to_string();
    for (mount, want) in [
        (
            "graph",
            "The result holds several lists (/entities, /relations): set view.data in the overlay to one.",
        ),
        ("pointer", "The result has nothing at /nodes (view.data)."),
    ] {
        let (summary, _, _) = run_driver(
            &mut gateway,
            &format!("{base}/{mount}/mcp"),
            &format!("browser-builtin-empty-{mount}"),
            &["--tool", "echo", "--args", &args, "--expect", want],
        );
        let view_text = texts(&summary["view_text"]);
        assert!(view_text.contains(want), "{mount}: {view_text:?}");
        let bad_console = console_errors(&summary);
        assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    }
    stop_gateway(gateway);
}

/// The fixture's `echo` (its text back, unchanged) shown by built-in widgets, one mount
/// per kind: Markdown with markup and script links in it, 1.6 MB of unclosed inline
/// delimiters, a chart of the largest finite numbers, every kind with hostile records
/// (markup in text, `javascript:` and `data:` URLs where links and images go), a
/// descending sort, and each kind's empty state. Each must render, create no element
/// from the content's markup, link only http(s), and finish: before, the Markdown's
/// inline pattern backtracked over the paragraph from every `[`, and the chart's axis
/// overflowed to Infinity and its tick loop never ended.
#[test]
fn builtin_widgets_render_hostile_and_huge_content_and_run_none_of_it() {
    if !peers_ready() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let json_kind = |kind: &str, view: &str| {
        format!(
            "[tools.echo]\nwidget = \"builtin:{kind}\"\nresult = {{ structured_from_text = true }}\nview = {view}\n"
        )
    };
    let mounts = [
        (
            "md",
            "[tools.echo]\nwidget = \"builtin:markdown\"\n".to_owned(),
        ),
        ("chart", json_kind("chart", "{ x = \"name\" }")),
        (
            "table",
            json_kind(
                "table",
                "{ columns = [\"name\", { key = \"site\", format = \"link\" }, { key = \"n\", format = \"number\" }], sort = \"n\" }",
            ),
        ),
        (
            "list",
            json_kind("list", "{ primary = \"name\", secondary = \"site\" }"),
        ),
        (
            "card",
            json_kind(
                "card",
                "{ title = \"name\", image = \"img\", fields = [{ key = \"site\", format = \"link\" }] }",
            ),
        ),
        (
            "kv",
            json_kind(
                "kv",
                "{ fields = [{ key = \"name\" }, { key = \"site\", format = \"link\" }] }",
            ),
        ),
    ];
    let (dir, mut gateway, base) = fixture_mounts(&mounts);
    let (md, chart) = (format!("{base}/md/mcp"), format!("{base}/chart/mcp"));
    let args_file = |name: &str, text: &str| {
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::json!({ "text": text }).to_string()).unwrap();
        format!("@{}", path.display())
    };

    // Markup and script links are text; only the http(s) link is a link.
    let hostile = "# Hostile\n\n<script>window.parent.postMessage('pwned', '*')</script> \
        <img src=x onerror=\"window.pwned = 1\"> <b onclick=\"alert(1)\">bold?</b>\n\n\
        [script](javascript:alert(1)) [data](data:text/html,<script>alert(1)</script>) \
        [fine](https://example.com/a) **strong** `code`";
    let hostile_args = args_file("hostile", hostile);
    for (selector, want) in [
        (
            ".md script, .md img, .md b, .md iframe, .md [onerror], .md [onclick], \
             .md a:not([href='https://example.com/a'])",
            0,
        ),
        (
            ".md a[href='https://example.com/a'], .md strong, .md code",
            3,
        ),
    ] {
        let (summary, _, _) = run_driver(
            &mut gateway,
            &md,
            "browser-builtin-markdown-hostile",
            &[
                "--tool",
                "echo",
                "--args",
                &hostile_args,
                "--count",
                selector,
            ],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        assert_eq!(summary["count"], want, "{selector}\n{}", context());
        let view_text = texts(&summary["view_text"]);
        assert!(
            view_text.contains("<script>") && view_text.contains("onerror="),
            "the markup shows as text: {view_text:?}"
        );
        let bad_console = console_errors(&summary);
        assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    }

    // 1.6 MB of inline delimiters that never close: rendered, as one paragraph
    // (before, the `[` alone kept the widget's thread busy for minutes).
    let huge = format!(
        "{} {} {} {} {}",
        "[".repeat(1_500_000),
        "*".repeat(40_000),
        "_".repeat(40_000),
        "`".repeat(40_000),
        "[a](".repeat(8_000)
    );
    let huge_args = args_file("huge", &huge);
    let started = Instant::now();
    let (summary, _, took) = run_driver(
        &mut gateway,
        &md,
        "browser-builtin-markdown-huge",
        &["--tool", "echo", "--args", &huge_args, "--count", ".md p"],
    );
    assert_eq!(
        summary["count"],
        1,
        "{}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
    eprintln!(
        "browser builtin:markdown, {} KB of unclosed delimiters: driver {:.1} s",
        huge.len() / 1000,
        took.as_secs_f64()
    );

    // The largest finite numbers, above and on both sides of zero: a bar each,
    // every axis label a number (before: the axis of the first overflowed to
    // Infinity and its tick loop never ended; the second drew NaN).
    for (name, rows) in [
        (
            "above",
            r#"[{"n":"big","v":1.7e308},{"n":"one","v":1},{"n":"max","v":1.7976931348623157e308}]"#,
        ),
        (
            "both",
            r#"[{"n":"big","v":1.7e308},{"n":"small","v":-1.7e308},{"n":"one","v":1}]"#,
        ),
    ] {
        let rows_args = args_file(name, rows);
        let (summary, _, _) = run_driver(
            &mut gateway,
            &chart,
            &format!("browser-builtin-chart-{name}"),
            &[
                "--tool", "echo", "--args", &rows_args, "--count", "svg rect",
            ],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        assert_eq!(summary["count"], 3, "a bar per row\n{}", context());
        let view_text = texts(&summary["view_text"]);
        assert!(
            !view_text.contains("Infinity")
                && !view_text.contains("NaN")
                && !view_text.contains('∞'),
            "every label is a number: {view_text:?}"
        );
        let bad_console = console_errors(&summary);
        assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    }
    // Every kind, hostile records: markup in text, script and data URLs
    // where links and images go. Nothing is made of the markup, no link or
    // image but http(s) (and the image kinds' data:image/png) exists.
    let mount = |kind: &str| format!("{base}/{kind}/mcp");
    let hostile_rows = serde_json::json!([
        {
            "name": "<img src=x onerror=\"parent.postMessage('pwned', '*')\"><script>alert(1)</script>",
            "site": "javascript:alert(1)",
            "img": "javascript:alert(1)",
            "n": 2
        },
        {
            "name": "<a href=\"javascript:alert(1)\" onclick=\"alert(1)\">click</a>",
            "site": "https://example.com/x",
            "img": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+",
            "n": 1
        }
    ]);
    let nothing_made = "#root script, #root iframe, #root object, #root [onerror], \
        #root [onclick], #root [onload], #root img:not([src^='https:']):not([src^='data:image/png']), \
        #root a:not([href^='https:']):not([href^='http:'])";
    for kind in ["table", "list", "card", "kv", "chart"] {
        let data = if kind == "kv" {
            hostile_rows[0].clone()
        } else {
            hostile_rows.clone()
        };
        let args = args_file(&format!("{kind}-hostile"), &data.to_string());
        let (summary, _, _) = run_driver(
            &mut gateway,
            &mount(kind),
            &format!("browser-builtin-{kind}-hostile"),
            &["--tool", "echo", "--args", &args, "--count", nothing_made],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        assert_eq!(summary["count"], 0, "{kind}\n{}", context());
        let view_text = texts(&summary["view_text"]);
        assert!(
            view_text.contains("<img src=x onerror="),
            "{kind}: the markup shows as text: {view_text:?}"
        );
        let bad_console = console_errors(&summary);
        assert!(
            bad_console.is_empty(),
            "{kind}: browser errors: {bad_console:?}"
        );
    }
    // The table's links that are links, and a descending sort.
    let rows = serde_json::json!([
        { "name": "alpha", "site": "https://example.com/a", "n": 1 },
        { "name": "gamma", "site": "https://example.com/g", "n": 3 },
        { "name": "beta", "site": "https://example.com/b", "n": 2 }
    ]);
    let args = args_file("table-sort", &rows.to_string());
    let (summary, _, _) = run_driver(
        &mut gateway,
        &mount("table"),
        "browser-builtin-table-descending",
        &[
            "--tool",
            "echo",
            "--args",
            &args,
            "--click",
            "th:nth-child(3) button",
            "--expect",
            "Sorted by N, descending.",
            "--count",
            "#root a[href^='https://example.com/']",
        ],
    );
    assert_eq!(
        summary["count"],
        3,
        "{}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
    let view_text = texts(&summary["view_text"]);
    let at = |name: &str| {
        view_text
            .find(name)
            .unwrap_or_else(|| panic!("{name} in {view_text:?}"))
    };
    assert!(
        at("gamma") < at("beta") && at("beta") < at("alpha"),
        "sorted by n, descending: {view_text:?}"
    );
    // 40,000 rows: the first 500 drawn, the count said, the rest on request.
    let many: Vec<serde_json::Value> = (0..40_000)
        .map(|i| serde_json::json!({ "name": format!("row {i}"), "site": "https://example.com/r", "n": i }))
        .collect();
    let args = args_file("table-many", &serde_json::Value::Array(many).to_string());
    let (summary, _, took) = run_driver(
        &mut gateway,
        &mount("table"),
        "browser-builtin-table-many",
        &[
            "--tool",
            "echo",
            "--args",
            &args,
            "--expect",
            "Showing 500 of 40",
            "--count",
            "#root tbody tr",
        ],
    );
    let view_text = texts(&summary["view_text"]);
    assert_eq!(summary["count"], 500, "{view_text:.300}");
    assert!(view_text.contains("40000 rows"), "{view_text:.300}");
    eprintln!(
        "browser builtin:table, 40,000 rows: driver {:.1} s",
        took.as_secs_f64()
    );
    // Each kind's empty state.
    for (kind, data) in [
        ("table", "[]"),
        ("list", "[]"),
        ("card", "[]"),
        ("chart", "[]"),
        ("kv", "{}"),
    ] {
        let args = args_file(&format!("{kind}-empty"), data);
        let (summary, _, _) = run_driver(
            &mut gateway,
            &mount(kind),
            &format!("browser-builtin-{kind}-empty"),
            &[
                "--tool",
                "echo",
                "--args",
                &args,
                "--expect",
                "Nothing to show.",
            ],
        );
        let bad_console = console_errors(&summary);
        assert!(
            bad_console.is_empty(),
            "{kind}: browser errors: {bad_console:?}"
        );
    }

    stop_gateway(gateway);
    eprintln!(
        "browser builtin widgets against hostile content: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
