//! Built-in widgets, no HTML written: rows shown, sorted and themed, actions
//! that call tools (asking first when a tool may be destructive), charts, and
//! a widget with nothing to show saying why.

use super::*;

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
    let _turn = turn();
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
    let _turn = turn();
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
    let _turn = turn();
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
// Built-in widgets against content chosen to break them

/// A built-in widget with nothing to show says why when the result tells:
/// a table over a result with two lists and no `view.data` names both
/// pointers, and a `view.data` that points at nothing is named.
#[test]
fn a_builtin_widget_with_nothing_to_show_says_why() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
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
