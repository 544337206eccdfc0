//! A widget written against ChatGPT's `window.openai` only, in an MCP Apps
//! host, through the bridge the gateway serves it with; and the bridge
//! against a hostile tool result, a huge widget state and state planted by
//! another document of the frame's origin.

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
    let _turn = turn();
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

/// `tests/browser/bridge.mjs --case CASE`: the bridge script in a small host
/// page of its own in Chromium (no gateway); the case's summary.
fn bridge_case(case: &str) -> Value {
    let mut cmd = Command::new(super::vite::node());
    cmd.arg(root().join("tests/browser/bridge.mjs"))
        .args(["--case", case, "--timeout", DRIVER_OWN_TIMEOUT_S])
        .current_dir(root());
    let mut driver = Proc::spawn(format!("bridge.mjs ({case})"), &mut cmd);
    let (status, stdout, _) = driver
        .finish(DRIVER_LIMIT)
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::write(artifacts_dir().join(format!("bridge-{case}.json")), &stdout);
    let summary: Value = serde_json::from_str(&stdout).unwrap_or_default();
    assert!(
        status.success() && summary["ok"] == true,
        "bridge.mjs --case {case} ({status}): {}\n{}",
        summary["reason"],
        driver.tail(30)
    );
    summary["cases"][case].clone()
}

/// Another frame of the host page (another origin) posts the widget a tool
/// result, a theme change, and answers under every request id while the
/// widget's `callTool` waits for its host: the bridge takes messages from its
/// host only, so the widget's `toolOutput` and theme stay as they were and
/// its call resolves with the host's answer, not the forged one.
#[test]
fn messages_from_another_frame_are_ignored_by_the_bridge() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let got = bridge_case("foreign");
    assert_eq!(got["foreign_frames"], 1, "the other frame posted: {got}");
    for when in ["during", "after"] {
        assert_eq!(got[when]["toolOutput"], Value::Null, "{when}: {got}");
        assert_ne!(got[when]["theme"], "forged", "{when}: {got}");
    }
    assert_eq!(got["result"]["structuredContent"]["genuine"], true, "{got}");
    assert_eq!(
        got["result"]["structuredContent"]["forged"],
        Value::Null,
        "{got}"
    );
}

/// A tool result whose `"__proto__"` key (an own key, as a JSON parser and
/// the structured clone leave it) holds `{"isError": true}`: what `callTool`
/// resolves with keeps it as a key and has the ordinary prototype. (Before:
/// the bridge copied the result by assignment, which set the prototype, and
/// `isError` read `true`.)
#[test]
fn a_proto_key_in_a_tool_result_never_becomes_the_prototype_of_what_call_tool_returns() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let got = bridge_case("proto");
    assert_eq!(got["isError"], Value::Null, "{got}");
    assert_eq!(got["polluted"], Value::Null, "{got}");
    assert_eq!(got["prototype_is_object"], true, "{got}");
    assert_eq!(got["own_proto_key"], true, "{got}");
    assert_eq!(got["result"], "fine", "{got}");
    assert_eq!(got["structured"]["n"], 1, "{got}");
    assert_eq!(got["global_polluted"], Value::Null, "{got}");
}

/// `setWidgetState` of 12 MB: refused (the promise rejects naming the limit,
/// a console warning says the same), nothing posted to the host, the state
/// before it kept. States just under the limit for six calls, more than an
/// origin's storage holds together: the latest comes back on its remount (the
/// bridge's oldest records give way); in a frame without storage the state
/// is set and sent as before, with nothing in the console. (Before: the 12 MB
/// were posted whole and silently not stored; the sixth near-limit state was
/// silently lost.)
#[test]
fn widget_state_over_its_limit_is_refused_and_said_so_and_the_latest_state_is_kept() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let got = bridge_case("state-size");
    assert_eq!(got["small"], "resolved", "{got}");
    let big = texts(&got["big"]);
    assert!(
        big.starts_with("rejected: ") && big.contains("over the limit of 1048576"),
        "{got}"
    );
    assert_eq!(
        got["posted_chars"].as_array().map(Vec::len),
        Some(1),
        "only the small state reached the host: {got}"
    );
    assert!(
        got["posted_chars"][0].as_u64().unwrap_or(u64::MAX) < 1000,
        "{got}"
    );
    assert_eq!(got["widget_state_after"]["selected"], 2, "{got}");
    assert!(
        got["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|m| texts(m).contains("over the limit"))),
        "a console warning names the limit: {got}"
    );
    assert_eq!(got["remount_after_six_near_limit"], 1_000_000, "{got}");
    // In a frame without storage the state is still set and sent, quietly.
    let opaque = &got["without_storage"];
    assert_eq!(opaque["outcome"], "resolved", "{got}");
    assert_eq!(opaque["widget_state"]["selected"], 3, "{got}");
    assert_eq!(opaque["console"], serde_json::json!([]), "{got}");
}

/// State another document of the frame's origin planted for the call (under
/// the key an earlier bridge used, the call's id alone, and under the
/// widget's and call's key with a record of another widget inside) is not
/// restored; the widget's own state comes back on a remount of the same call,
/// and not to another widget mounted for a call of the same id, nor to the
/// same widget for another call. (Before: state was kept under the call's id
/// alone, and whatever stood there was restored into any widget.)
#[test]
fn widget_state_is_restored_only_to_its_own_widget_and_call() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let got = bridge_case("planted");
    assert_eq!(got["planted_keys"], 2, "{got}");
    assert_eq!(got["mounted_with_planted"], Value::Null, "{got}");
    assert_eq!(got["remount_same"]["selected"], "own", "{got}");
    assert_eq!(got["other_widget_same_call"], Value::Null, "{got}");
    assert_eq!(got["same_widget_other_call"], Value::Null, "{got}");
}

/// `window.openai.toolInput` is empty until the host's
/// `ui/notifications/tool-input` (ChatGPT sends a call's arguments only once
/// the user approved it: plugin UI changelog, May 2026), then is the
/// notification's `arguments`, and `openai:set_globals` carries them. Nothing
/// fills it before: no event names `toolInput` until the notification.
#[test]
fn tool_input_reaches_window_openai_only_with_the_hosts_notification() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let got = bridge_case("tool-input");
    assert_eq!(got["before"], serde_json::json!({}), "{got}");
    assert_eq!(got["events_before"], 0, "{got}");
    let args = serde_json::json!({ "city": "Lyon", "days": 3 });
    assert_eq!(got["after"], args, "{got}");
    assert_eq!(
        got["events"],
        serde_json::json!([{ "toolInput": args }]),
        "{got}"
    );
}

/// The host's `hostContext.styles.variables` reach a `window.openai`
/// widget's document root as CSS variables, from `ui/initialize`'s answer
/// and from `ui/notifications/host-context-changed` (a key that is not a
/// custom property is left out); `window.openai` gains no field of its own
/// for them (ChatGPT documents none). (Before: neither reached the widget.)
#[test]
fn host_style_variables_reach_a_window_openai_widgets_computed_style() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let got = bridge_case("styles");
    assert_eq!(got["initialized"]["background"], "rgb(1, 2, 3)", "{got}");
    assert!(
        !texts(&got["initialized"]["inline"]).contains("not-a-variable"),
        "{got}"
    );
    assert_eq!(got["changed"]["text"], "rgb(4, 5, 6)", "{got}");
    assert_eq!(got["changed"]["background"], "rgb(1, 2, 3)", "{got}");
    assert_eq!(got["openai_keys"], serde_json::json!([]), "{got}");
}
