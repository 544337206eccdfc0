//! A widget written the way most widgets are today: against ChatGPT's
//! `window.openai`, with React, Vite and `@openai/apps-sdk-ui`, in the style of
//! the Apps SDK examples (`tests/widgets/openai-app`: the tool output's tasks,
//! a task chosen as widget state, a Refresh button calling a tool with
//! `window.openai.callTool`, the host's theme). Built into an overlay on the
//! demo's `list_tasks` and rendered through the gateway in the AppBridge host,
//! an MCP Apps host with no `window.openai`: the gateway's bridge makes it run
//! there, widget state included across a remount; and the same widget under
//! `/preview`, whose `window.openai` it uses instead.

use super::vite::{free_port, node, vite_build};
use super::*;

fn project() -> PathBuf {
    root().join("tests/widgets/openai-app")
}

#[test]
fn an_apps_sdk_react_widget_runs_in_an_mcp_apps_host_and_in_preview() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let overlays = demo_overlays_with(
        dir.path(),
        "[tools.list_tasks]\n",
        "[tools.list_tasks]\nwidget = \"openai-app\"\n",
    );
    let widget = overlays.join("widgets/openai-app");
    vite_build(&project(), &widget.join("dist"), None);
    // Apps SDK UI's stylesheet declares KaTeX fonts on cdn.openai.com: a host
    // whose CSP does not allow that origin reports each as a violation, used
    // or not, so the widget declares it (ChatGPT needs it too).
    std::fs::write(
        widget.join("widget.toml"),
        "entry = \"dist/index.html\"\n\n[csp]\nresource_domains = [\"https://cdn.openai.com\"]\n",
    )
    .unwrap();

    let port = free_port();
    let public_url = format!("http://127.0.0.1:{port}");
    let (mut gateway, url) = start_gateway_env(
        &overlays,
        &format!("127.0.0.1:{port}"),
        &[("MCP_UI_GATEWAY_PUBLIC_URL", public_url.as_str())],
    );
    let (summary, _, took) = run_driver(
        &mut gateway,
        &url,
        "browser-openai-app",
        &[
            "--tool",
            "list_tasks",
            "--switch-theme",
            "dark",
            "--click",
            "[data-select='2']",
            "--then-click",
            "#refresh",
            "--expect",
            "Refreshed: 3 tasks.",
            "--expect-call",
            "--remount",
            "Selected: Write the release notes",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let host = &summary["host"];
    // The bridge started the handshake for it: an MCP Apps host, no window.openai.
    assert_eq!(host["app_info"]["name"], "window.openai", "{}", context());
    let view_text = texts(&summary["view_text"]);
    for shown in [
        "Water the plants",
        "Write the release notes",
        "3 tasks",
        "Selected: Write the release notes",
        "Refreshed: 3 tasks.",
        "theme: dark",
    ] {
        assert!(
            view_text.contains(shown),
            "{shown} in {view_text:?}\n{}",
            context()
        );
    }
    assert_eq!(summary["view_style"]["theme"], "dark", "{}", context());
    assert_eq!(summary["click"]["view_call"]["name"], "refresh_tasks");
    let height = reported_height(&summary);
    assert!(
        height > 100.0 && height < 700.0,
        "the View reported its content's height, got {height}\n{}",
        context()
    );
    // The host's teardown request is answered (the bridge answers for it).
    assert_eq!(host["teardown"], "answered", "{}", context());
    // Mounted anew for the same call: the widget state came back.
    assert_eq!(summary["remount"]["found"], true, "{}", context());
    assert_no_errors(&summary, "list_tasks");

    // The same widget under /preview, on the page's own window.openai.
    let base = url.trim_end_matches("/mcp");
    let screenshot = artifacts_dir().join("preview-openai-app.png");
    let mut cmd = Command::new(node());
    cmd.arg(root().join("tests/preview/run.mjs"))
        .args(["--url", &format!("{base}/preview")])
        .args([
            "--call",
            "list_tasks",
            "--expect",
            "Write the release notes",
        ])
        .args(["--timeout", DRIVER_OWN_TIMEOUT_S, "--screenshot"])
        .arg(&screenshot)
        .current_dir(root());
    let mut driver = Proc::spawn("preview run.mjs", &mut cmd);
    let (status, stdout, _) = driver
        .finish(DRIVER_LIMIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", gateway.tail(30)));
    let preview: Value = serde_json::from_str(&stdout).unwrap_or_default();
    assert!(
        status.success() && preview["ok"] == true,
        "/preview with the same widget: {}\n{}",
        preview["reason"],
        driver.tail(30)
    );
    assert!(
        texts(&preview["checks"]["widget_text"]).contains("3 tasks"),
        "{stdout}"
    );
    stop_gateway(gateway);
    eprintln!(
        "browser Apps SDK widget (React, Vite, apps-sdk-ui) in the AppBridge host: driver {:.1} s",
        took.as_secs_f64()
    );
}
