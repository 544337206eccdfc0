//! `/preview` as each host: the widget rendered as the MCP Apps host, as
//! ChatGPT and as Claude, and what the page says each host sees (which tools
//! the model sees and which only the app, the widget's origin, its height
//! against the host's limit, its CSP). Also what the hosts now send: the
//! host's style variables reaching the widget's computed style, and the tool
//! input reaching `window.openai` only with `ui/notifications/tool-input`.

use std::ffi::OsStr;

use serde_json::Value;

use super::{base_url, browser_ready, drive, lines_until, start_gateway_with, turn};

/// The demo with `list_tasks` on the built-in table and `complete_task` on a
/// widget that knows only `window.openai`, behind `public_url` (so the hosts'
/// widget origins are derived). The page lists the app-only helper
/// `refresh_tasks` as app only for every host; renders the table as ChatGPT
/// and as Claude with each one's CSS variable on the widget's root; says
/// each host's origin (ChatGPT's per app, Claude's per server), height rule
/// and CSP; as Claude cuts a widget that grows past 500 px at 500 and says
/// so; and as ChatGPT gives the `window.openai` widget an empty `toolInput`
/// until the tool input arrives. (Before: one host only, no style variables,
/// and `toolInput` filled with the call's arguments from the start.)
#[test]
fn preview_renders_the_widget_as_each_host_and_says_what_each_sees() {
    if !browser_ready("the /preview hosts test") {
        return;
    }
    let _turn = turn();
    let temp = tempfile::tempdir().unwrap();
    let overlays = super::demo_with_two_widgets(temp.path(), "");
    let config = temp.path().join("gw.toml");
    std::fs::write(
        &config,
        "public_url = \"https://gw.example.com\"\npreview = true\n",
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    // The demo (no upstream configured), behind a public URL.
    let (mut gateway, lines) =
        start_gateway_with(&overlays, &[OsStr::new("--config"), OsStr::new(&config)]);
    let base = base_url(lines.last().unwrap());
    lines_until(&mut gateway, "Preview: ");
    let (summary, context) = drive(
        &mut gateway,
        "preview-hosts",
        &[
            OsStr::new("--url"),
            OsStr::new(&format!("{base}/preview")),
            OsStr::new("--hosts"),
        ],
    );
    let context = || context.clone();
    let checks = &summary["checks"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();

    // Visibility: the app-only helper is marked, and every host's column
    // lists it apart from what the model sees.
    assert_eq!(
        checks["app_only_badges"],
        serde_json::json!(["refresh_tasks"]),
        "{}",
        context()
    );
    let before = &checks["table_before"];
    for host in ["apps", "chatgpt", "claude"] {
        assert!(
            text(&before["app-only"][host]).contains("refresh_tasks"),
            "{host}\n{}",
            context()
        );
        assert!(
            !text(&before["model"][host]).contains("refresh_tasks")
                && text(&before["model"][host]).contains("add_task"),
            "{host}\n{}",
            context()
        );
    }
    // Each host's CSS variables reach the built-in table's root; the MCP
    // Apps host here sends none.
    let hosts = &checks["hosts"];
    for host in ["chatgpt", "claude"] {
        let got = &checks["as"][host];
        assert_eq!(got["frame_host"], host, "{}", context());
        assert_eq!(
            got["background"],
            hosts[host]["styles"]["light"]["--color-background-primary"],
            "{host}: the widget computes the host's variable\n{}",
            context()
        );
    }
    assert_ne!(
        checks["as"]["chatgpt"]["background"],
        checks["as"]["claude"]["background"],
        "{}",
        context()
    );
    assert_eq!(checks["as"]["apps"]["background"], "", "{}", context());
    // Origins: ChatGPT's per app, Claude's per server, from public_url.
    let table = &checks["as"]["claude"]["table"];
    assert!(
        text(&table["origin"]["chatgpt"]).ends_with(".web-sandbox.oaiusercontent.com"),
        "{}",
        context()
    );
    assert!(
        text(&table["origin"]["claude"]).contains(".claudemcpcontent.com"),
        "{}",
        context()
    );
    // Height: each host's rule, Claude's against what the widget reported.
    assert!(
        text(&table["height"]["claude"]).contains("at most 500 px")
            && text(&table["height"]["claude"]).contains("reported "),
        "{}",
        context()
    );
    assert!(
        text(&table["height"]["chatgpt"]).contains("no cap"),
        "{}",
        context()
    );
    // CSP: each host's, from the resource's declarations.
    assert!(
        text(&table["csp"]["claude"]).starts_with("_meta.ui.csp: connect-src"),
        "{}",
        context()
    );
    assert!(
        text(&table["csp"]["chatgpt"]).contains("connect-src"),
        "{}",
        context()
    );
    // As Claude, a widget grown past 500 px stays 500 px high, and the page
    // says it is cut off.
    let tall = &checks["claude_tall"];
    assert!(
        tall["reported"].as_f64().is_some_and(|h| h > 900.0),
        "{}",
        context()
    );
    assert_eq!(tall["frame_height"], 500.0, "{}", context());
    assert!(text(&tall["cell"]).contains("cut off"), "{}", context());
    assert_eq!(tall["flagged"], 1, "{}", context());
    // As ChatGPT, the window.openai widget: empty toolInput first, then the
    // call's arguments, and ChatGPT's variable on its root.
    let openai = &checks["openai_as_chatgpt"];
    assert_eq!(openai["first_input"], "first input={}", "{}", context());
    assert!(
        text(&openai["globals"]).contains(r#"input={"id":1}"#),
        "{}",
        context()
    );
    assert_eq!(
        openai["background"],
        hosts["chatgpt"]["styles"]["light"]["--color-background-primary"],
        "{}",
        context()
    );
    let _ = gateway.terminate(std::time::Duration::from_secs(20));
}
