//! Widgets size themselves to their content, down as well as up.

use super::*;

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
    let _turn = turn();
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
