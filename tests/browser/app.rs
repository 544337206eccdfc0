//! An app endpoint: a widget calling its own server's tool by its own name.

use super::*;

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
    let _turn = turn();
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
