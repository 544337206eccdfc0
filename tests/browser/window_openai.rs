//! A widget written against ChatGPT's `window.openai` only, in an MCP Apps
//! host, through the bridge the gateway serves it with.

use super::*;

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
