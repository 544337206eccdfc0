//! The demo's three flows through the gateway: "Done" on task 2 after the
//! decoupled render, "Add" from the widget, and "Refresh" through the
//! app-only helper without a new render.

use super::*;

#[test]
fn done_on_task_2_completes_it_through_the_gateway_and_the_widget_shows_it() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
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
    let _turn = turn();
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
    let _turn = turn();
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
