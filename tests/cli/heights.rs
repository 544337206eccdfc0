//! `check` measures each inline widget's height against Claude's 500 px:
//! rendered in headless Chromium with its tool's `sample`, as a host
//! renders it (the resource as the gateway serves it, the `ui/*` bridge),
//! in one browser run per check. Chromium is found as the product finds
//! it (`$CHROMIUM`, else `chromium` on the PATH); without it these tests
//! fail, unless `MCP_UI_SKIP_PEERS=1`.

use super::*;

/// This test's turn: Chromium is not run beside the suite's other heavy tests
/// (`support::peers::HEAVY`).
pub(super) async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    support::peers::HEAVY.lock().await
}

/// Whether Chromium is here to measure with; without it the test fails,
/// unless skipping was asked for.
pub(super) fn chromium_ready(test: &str) -> bool {
    let found = match std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        Some(p) => Path::new(&p).exists(),
        None => std::process::Command::new("sh")
            .args(["-c", "command -v chromium"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
    };
    if found {
        return true;
    }
    if std::env::var(support::peers::SKIP_ENV).as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED: {test}: Chromium not found (chromium on PATH, or $CHROMIUM), and {}=1",
            support::peers::SKIP_ENV
        );
        return false;
    }
    panic!(
        "{test}: Chromium not found (chromium on PATH, or $CHROMIUM). Install it \
         (`bash scripts/install-peers.sh` does), or set {}=1 to skip.",
        support::peers::SKIP_ENV
    );
}

/// An MCP Apps widget that draws one 100 px row per `structuredContent.rows`
/// once its result arrives (a moment later, as a widget that renders
/// asynchronously does), then reports its body's height.
const ROWS_WIDGET: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><style>body { margin: 0 } .row { height: 100px }</style></head>
<body><div id="rows"></div>
<script>
  var host = window.parent;
  window.addEventListener('message', function (event) {
    var m = event.data;
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.id === 'init' && m.result) host.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {} }, '*');
    if (m.method !== 'ui/notifications/tool-result') return;
    setTimeout(function () {
      var rows = document.getElementById('rows');
      for (var i = 0; i < m.params.structuredContent.rows; i++) {
        var row = document.createElement('div');
        row.className = 'row';
        row.textContent = 'row ' + i;
        rows.appendChild(row);
      }
      host.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { height: document.body.offsetHeight } }, '*');
    }, 100);
  });
  host.postMessage({ jsonrpc: '2.0', id: 'init', method: 'ui/initialize',
    params: { appInfo: { name: 'rows', version: '1' }, appCapabilities: {}, protocolVersion: '2026-01-26' } }, '*');
</script></body></html>
"#;

/// A widget written against ChatGPT's `window.openai` only: a block as
/// tall as `toolOutput.height`, told with `notifyIntrinsicHeight`.
const OPENAI_WIDGET: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><style>body { margin: 0 }</style></head>
<body><div id="block"></div>
<script>
  function draw() {
    var out = window.openai && window.openai.toolOutput;
    if (!out) return;
    document.getElementById('block').style.height = out.height + 'px';
    window.openai.notifyIntrinsicHeight(out.height);
  }
  window.addEventListener('openai:set_globals', draw);
  draw();
</script></body></html>
"#;

/// The demo's configuration, and overlays with a sample on each widget:
/// `rows` 9 rows high (900 px) on `list_tasks` and 2 (200 px) on
/// `add_task`, the `window.openai` widget at 700 px on `complete_task`, a
/// built-in table of 40 tasks as a render tool, and a short built-in
/// Markdown text on `refresh_tasks`.
fn widgets_dir(root: &Path) {
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let tasks: Vec<String> = (1..=40)
        .map(|i| format!("{{ id = {i}, title = \"Task number {i}\", done = false }}"))
        .collect();
    let overlay = format!(
        r#"[tools.list_tasks]
widget = "rows"
sample = {{ arguments = {{}}, structured_content = {{ rows = 9 }} }}

[tools.add_task]
widget = "rows"
sample = {{ arguments = {{ title = "x" }}, structured_content = {{ rows = 2 }} }}

[tools.complete_task]
widget = "openai"
sample = {{ arguments = {{ id = 1 }}, structured_content = {{ height = 700 }} }}

[tools.refresh_tasks]
widget = "builtin:markdown"
view = {{ data = "/text" }}
sample = {{ arguments = {{}}, structured_content = {{ text = "Two short lines." }} }}

[render.task_table]
widget = "builtin:table"
data_tools = ["list_tasks"]
input_schema = {{ type = "object", properties = {{ tasks = {{ type = "array" }} }} }}
view = {{ data = "/tasks" }}
sample = {{ arguments = {{ tasks = [{}] }} }}
"#,
        tasks.join(", ")
    );
    write(root.join("overlays/demo.toml"), &overlay);
    write(root.join("overlays/widgets/rows/index.html"), ROWS_WIDGET);
    write(
        root.join("overlays/widgets/openai/index.html"),
        OPENAI_WIDGET,
    );
}

/// The widget-height findings of `stdout`.
fn height_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.contains("[app-directory/widget-height: Claude]"))
        .collect()
}

/// Every widget with a sample is rendered and measured in one check: the
/// custom widget whose sample makes it 900 px tall and the `window.openai`
/// one at 700 px are reported with their heights against Claude's 500, at
/// their sample's key; the built-in table of 40 rows is measured too; the
/// 200 px widget and the short Markdown text pass silently. `--strict`
/// fails on the tall ones. (Before: every one was "not measured".)
#[tokio::test]
async fn check_measures_each_inline_widget_with_its_sample() {
    if !chromium_ready("check_measures_each_inline_widget_with_its_sample") {
        return;
    }
    let _turn = turn().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    widgets_dir(root);
    let args = [
        "check",
        "--config",
        "gw.toml",
        "--offline",
        "--host",
        "claude",
    ];
    let out = run(root, &args).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let lines = height_lines(&stdout);
    let tall = "warning: overlays/demo.toml:1: tools.list_tasks.sample: [app-directory/widget-height: Claude] its widget `rows` is 900 px high with its sample; Claude shows at most 500 px inline";
    let openai = "warning: overlays/demo.toml:9: tools.complete_task.sample: [app-directory/widget-height: Claude] its widget `openai` is 700 px high with its sample; Claude shows at most 500 px inline";
    for expected in [tall, openai] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "missing {expected:?}\n{both}"
        );
    }
    let table = lines
        .iter()
        .find(|l| l.contains("render.task_table.sample:"))
        .unwrap_or_else(|| panic!("the built-in table is not reported\n{both}"));
    let px: u32 = table
        .split("its widget `builtin:table` is ")
        .nth(1)
        .and_then(|rest| rest.split(" px high").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no height in {table:?}\n{both}"));
    assert!(px > 500, "40 rows of a table: {px} px\n{both}");
    assert!(
        table.contains("no `view` option bounds a built-in widget's height"),
        "{both}"
    );
    assert_eq!(lines.len(), 3, "the short widgets pass silently\n{both}");
    assert!(!stdout.contains("not measured"), "{both}");
    // One browser run for the five.
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("measuring ").count(),
        1,
        "one browser run\n{both}"
    );
    assert!(stderr.contains("measuring 5 widgets"), "{both}");

    let mut strict = args.to_vec();
    strict.push("--strict");
    let out = run(root, &strict).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(stdout.contains(&tall["warning: ".len()..]), "{both}");
}

/// No browser: each widget with a sample is "not measured", saying how to
/// measure it; a warning, and a problem with `--strict`, never a pass and
/// never a wait. `--host chatgpt` measures nothing at all.
#[tokio::test]
async fn without_a_browser_widgets_are_not_measured_and_chatgpt_measures_none() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    widgets_dir(root);
    let args = [
        "check",
        "--config",
        "gw.toml",
        "--offline",
        "--host",
        "claude",
        "--browser",
        "/nonexistent/chromium",
    ];
    let out = run(root, &args).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let lines = height_lines(&stdout);
    assert_eq!(lines.len(), 5, "{both}");
    let expected = "warning: overlays/demo.toml:1: tools.list_tasks.sample: [app-directory/widget-height: Claude] its widget `rows` was not measured: --browser /nonexistent/chromium: no such file;";
    assert!(
        lines.iter().any(|l| l.starts_with(expected)),
        "missing {expected:?}\n{both}"
    );
    assert!(
        lines.iter().all(|l| l.contains("not measured")
            && l.contains("install Chromium")
            && l.contains("--browser PATH")
            && l.contains("/preview")),
        "{both}"
    );
    let mut strict = args.to_vec();
    strict.push("--strict");
    let out = run(root, &strict).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert_eq!(height_lines(&stdout).len(), 5, "{both}");

    // ChatGPT's rules have no height: nothing is measured, no browser is
    // looked for.
    let chatgpt = [
        "check",
        "--config",
        "gw.toml",
        "--offline",
        "--host",
        "chatgpt",
        "--browser",
        "/nonexistent/chromium",
    ];
    let out = run(root, &chatgpt).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        !stdout.contains("widget-height") && !text(&out.stderr).contains("measuring"),
        "{both}"
    );
}

/// A widget that never yields (an endless loop once its result arrives)
/// keeps the browser from answering: the run is ended at
/// `--browser-timeout`, and its widgets are "not measured", saying so.
#[tokio::test]
async fn a_browser_that_does_not_answer_is_ended_at_the_timeout() {
    if !chromium_ready("a_browser_that_does_not_answer_is_ended_at_the_timeout") {
        return;
    }
    let _turn = turn().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    write(
        root.join("overlays/demo.toml"),
        "[tools.list_tasks]\nwidget = \"spin\"\nsample = { arguments = {}, structured_content = { n = 1 } }\n",
    );
    let spin = ROWS_WIDGET.replace(
        "setTimeout(function () {",
        "for (;;) {} setTimeout(function () {",
    );
    write(root.join("overlays/widgets/spin/index.html"), &spin);
    let args = [
        "check",
        "--config",
        "gw.toml",
        "--offline",
        "--host",
        "claude",
        "--browser-timeout",
        "3",
    ];
    let out = run(root, &args).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains(
            "tools.list_tasks.sample: [app-directory/widget-height: Claude] its widget `spin` was not measured: the browser did not answer within 3 s"
        ),
        "{both}"
    );
}
